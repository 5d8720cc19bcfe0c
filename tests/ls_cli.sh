#!/usr/bin/env bash
# ls_cli.sh - `tailbus ls` with a real tailbusd and real producers: a bus a
# collector serves and a mistyped one that none does, in one directory; the
# collector's states (serving, none, stopped, silent) and the attached
# producers as the segments say them; --remove-stale AGE removing only what no
# collector and no producer has used for AGE, naming each one; unreadable
# segments and bad options refused with a clear sentence.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}"
use_tmp
unset TAILBUS_DIR TAILBUS_BUS

BUS=served
start_collector $BUS || exit 1
SEG=$tmp/$BUS/seg

# the mistyped bus: a producer attached to a name no collector serves
# (held until the checks below end it: killed, so it never detaches)
TAILBUS_DIR=$SEG "$TB_EMIT" --bus typo --count 10 --hold-ms 60000 >/dev/null &
typo_pid=$!
pids+=("$typo_pid")
for _ in $(seq 100); do [[ -e $SEG/typo.tailbus ]] && break; sleep 0.02; done
sleep 0.3 # its metric registered, its events written

# bus_field FILE BUS KEY: one key of one bus in `ls --json`
bus_field() {
	python3 -c '
import json, sys
for b in json.load(open(sys.argv[1]))["buses"]:
    if b["bus"] == sys.argv[2]:
        print(b.get(sys.argv[3], "absent"))
        break
else:
    print("no bus")' "$@"
}

lists_both() {
	"$TAILBUS" ls --dir "$SEG" >"$tmp/ls.txt" || { cat "$tmp/ls.txt"; return 1; }
	grep -Eq "^served +serving \(pid $cpid\) +0 " "$tmp/ls.txt" &&
		grep -Eq "^typo +none +1 +1 " "$tmp/ls.txt" &&
		grep -q "^bus 'typo': no collector has this bus yet.*is the bus name right" "$tmp/ls.txt" &&
		! grep -q "^bus 'served'" "$tmp/ls.txt" || { cat "$tmp/ls.txt"; return 1; }
}
check "a mistyped bus shows with no collector and its producer; the served one with its pid" lists_both

json_both() {
	"$TAILBUS" ls --dir "$SEG" --json >"$tmp/ls.json" || return 1
	expect_eq "served collector" "$(bus_field "$tmp/ls.json" served collector)" serving &&
		expect_eq "served pid" "$(bus_field "$tmp/ls.json" served collector_pid)" "$cpid" &&
		expect_eq "typo collector" "$(bus_field "$tmp/ls.json" typo collector)" none &&
		expect_eq "typo producers" "$(bus_field "$tmp/ls.json" typo producers)" 1 &&
		expect_eq "typo metrics" "$(bus_field "$tmp/ls.json" typo metrics_registered)" 1 &&
		expect_eq "typo heartbeat" "$(bus_field "$tmp/ls.json" typo heartbeat_age_s)" None &&
		expect_eq "typo unused" "$(bus_field "$tmp/ls.json" typo unused)" False &&
		expect_eq "segment" "$(bus_field "$tmp/ls.json" typo segment)" "$SEG/typo.tailbus"
}
check "--json: collector state, pid, producers, metrics and path per bus" json_both

env_dir() {
	TAILBUS_DIR=$SEG "$TAILBUS" ls --json >"$tmp/env.json" &&
		expect_eq "buses" "$(python3 -c 'import json,sys; print(sorted(b["bus"] for b in json.load(open(sys.argv[1]))["buses"]))' "$tmp/env.json")" "['served', 'typo']"
}
check "without --dir, \$TAILBUS_DIR is searched as tb_attach searches it" env_dir

attached_is_kept() {
	"$TAILBUS" ls --dir "$SEG" --remove-stale 0 >"$tmp/keep.txt" || return 1
	[[ -e $SEG/typo.tailbus && -e $SEG/served.tailbus ]] &&
		! grep -q "^removed" "$tmp/keep.txt" || { cat "$tmp/keep.txt"; return 1; }
}
check "--remove-stale never removes a bus with a producer attached or a collector serving" attached_is_kept

kill -KILL "$typo_pid"
wait "$typo_pid" 2>/dev/null || true
young_is_kept() {
	"$TAILBUS" ls --dir "$SEG" --json --remove-stale 1h >"$tmp/young.json" || return 1
	expect_eq "producers" "$(bus_field "$tmp/young.json" typo producers)" 0 &&
		expect_eq "gone" "$(bus_field "$tmp/young.json" typo producers_gone)" 1 &&
		expect_eq "unused" "$(bus_field "$tmp/young.json" typo unused)" True &&
		expect_eq "removed" "$(bus_field "$tmp/young.json" typo removed)" False &&
		[[ -e $SEG/typo.tailbus ]] || return 1
	"$TAILBUS" ls --dir "$SEG" --remove-stale 1h | grep -q "^kept $SEG/typo.tailbus: unused for .* only"
}
check "a producer gone (killed): unused, but kept while it was used within AGE (and it says so)" young_is_kept

stale_is_removed() {
	sleep 1.2
	"$TAILBUS" ls --dir "$SEG" --remove-stale 1s >"$tmp/rm.txt" || { cat "$tmp/rm.txt"; return 1; }
	grep -q "^removed $SEG/typo.tailbus: no collector (none), no producer, unused for [0-9]* s$" "$tmp/rm.txt" &&
		[[ ! -e $SEG/typo.tailbus && ! -e $SEG/typo.tailbus.lock && -e $SEG/served.tailbus ]] ||
		{ cat "$tmp/rm.txt"; ls "$SEG"; return 1; }
	expect_eq "removed lines" "$(grep -c '^removed' "$tmp/rm.txt")" 1
}
check "--remove-stale AGE removes the bus unused for AGE, names it, keeps the served one" stale_is_removed

silent_is_kept() {
	kill -STOP "$cpid"
	sleep 2.3 # TB_COLLECTOR_SILENT_NS
	local rc=0
	"$TAILBUS" ls --dir "$SEG" --json --remove-stale 0 >"$tmp/silent.json" || rc=$?
	kill -CONT "$cpid"
	[[ $rc -eq 0 ]] || return 1
	expect_eq "state" "$(bus_field "$tmp/silent.json" served collector)" silent &&
		expect_eq "removed" "$(bus_field "$tmp/silent.json" served removed)" False &&
		[[ -e $SEG/served.tailbus ]]
}
check "a collector stopped by a signal is silent, and its bus is kept (it still runs)" silent_is_kept

stopped_is_removed() {
	stop_collector "$cpid" || return 1
	"$TAILBUS" ls --dir "$SEG" --json >"$tmp/stopped.json" &&
		expect_eq "state" "$(bus_field "$tmp/stopped.json" served collector)" stopped &&
		expect_eq "pid" "$(bus_field "$tmp/stopped.json" served collector_pid)" 0 || return 1
	"$TAILBUS" ls --dir "$SEG" --remove-stale 0 | grep -q "^removed $SEG/served.tailbus: no collector (stopped)" &&
		[[ ! -e $SEG/served.tailbus ]] &&
		"$TAILBUS" ls --dir "$SEG" | grep -qx "no buses in $SEG"
}
check "a stopped collector's bus is 'stopped' and can be removed; an empty directory says so" stopped_is_removed

other_users_bus() {
	# another user's private (0600) segment: named with its owner, not an error
	[[ $(id -u) -eq 0 ]] || return 77
	chmod 755 "$tmp"
	TAILBUS_DIR=$SEG "$TB_EMIT" --bus private --count 1 >/dev/null || return 1
	local rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TAILBUS" ls --dir "$SEG" \
		>"$tmp/other.txt" 2>&1 || rc=$?
	expect_eq "status" "$rc" 0 &&
		grep -Eq "^private +unreadable " "$tmp/other.txt" &&
		grep -q "^$SEG/private.tailbus: another user's segment, not readable by this one (uid 0)$" \
			"$tmp/other.txt" || { cat "$tmp/other.txt"; return 1; }
	rm -f "$SEG/private.tailbus"
}
check_skip_status=77
check "another user's private bus is listed with its owner, and is not an error (as root: nobody)" \
	other_users_bus

check_skip_status=

bad_input() {
	local rc=0
	head -c 8192 /dev/urandom >"$SEG/junk.tailbus"
	: >"$SEG/empty.tailbus"
	"$TAILBUS" ls --dir "$SEG" --json --remove-stale 0 >"$tmp/junk.json" 2>"$tmp/junk.err" || rc=$?
	expect_eq "status" "$rc" 1 &&
		expect_eq "junk error" "$(bus_field "$tmp/junk.json" junk error)" \
			"header: bad magic (not a tailbus segment, or not initialised)" &&
		expect_eq "empty error" "$(bus_field "$tmp/junk.json" empty error)" \
			"the segment was never initialised (too short): its creator is at work or died" &&
		[[ -e $SEG/junk.tailbus && -e $SEG/empty.tailbus ]] || return 1
	rc=0
	"$TAILBUS" ls --dir "$tmp/nowhere" 2>"$tmp/nowhere.err" || rc=$?
	expect_eq "missing dir status" "$rc" 1 &&
		grep -q "^tailbus ls: cannot read $tmp/nowhere: No such file or directory$" "$tmp/nowhere.err" || return 1
	for args in "--remove-stale soon" "--remove-stale -1s" "--bogus" "extra"; do
		rc=0
		# shellcheck disable=SC2086
		"$TAILBUS" ls --dir "$SEG" $args >/dev/null 2>"$tmp/usage.err" || rc=$?
		expect_eq "$args" "$rc" 2 && grep -q "^tailbus ls: " "$tmp/usage.err" || return 1
	done
}
check "files that are not segments are listed as unreadable (status 1), never removed; bad options exit 2" bad_input

summary ls_cli
