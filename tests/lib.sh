# shellcheck shell=bash
# lib.sh - the helpers the shell tests share; each script sources it first:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# (meson runs `bash /path/to/tests/NAME.sh` from the build directory, so the
# path comes from the script's own, not from the working directory.)
#
# It defines functions and the counters only: each script keeps its own
# `set -euo pipefail`, its checks of the environment and its calls.

passed=0
failed=0
skipped=0

# pass NAME, fail NAME: count one check and say so
pass() {
	passed=$((passed + 1))
	echo "ok: $1"
}

fail() {
	failed=$((failed + 1))
	echo "FAILED: $1"
}

# check NAME, then a command that must succeed (errexit is off inside it, as
# in any condition). With check_skip_status set (load_cli.sh: 77) that status
# counts as skipped, not failed; with check_seconds=1 "ok" gives the seconds.
check_skip_status=
check_seconds=0
# (Its locals are named so that no check's own variable can be one of them.)
check() {
	local check_name=$1 check_start=$SECONDS check_rc=0
	shift
	"$@" || check_rc=$?
	if [[ $check_rc -eq 0 ]]; then
		if [[ $check_seconds == 1 ]]; then check_name="$check_name ($((SECONDS - check_start)) s)"; fi
		pass "$check_name"
	elif [[ -n $check_skip_status && $check_rc -eq $check_skip_status ]]; then
		skipped=$((skipped + 1))
		echo "skip: $check_name"
	else
		fail "$check_name"
	fi
}

# summary NAME [MORE]: the last line, "NAME: P passed, F failed [MORE]"; its
# status (the script's, as its last command) is non-zero if a check failed
summary() {
	echo "$1: $passed passed, $failed failed${2:+ $2}"
	[[ $failed -eq 0 ]]
}

expect_eq() { # name, got, want
	[[ "$2" == "$3" ]] || { echo "  $1: got '$2', want '$3'"; return 1; }
}

# json_field FILE TAG KEY: one value from replay's JSON, the tag's KEY (lists
# comma-joined, null prints as None)
json_field() {
	python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc["tags"]:
    if t["tag"] == sys.argv[2]:
        v = t[sys.argv[3]]
        print(",".join(v) if isinstance(v, list) else v)
        break
else:
    sys.exit("no tag %r" % sys.argv[2])' "$@"
}

# no_interval_twice LOG...: no interval start (BaseTime + start, to the
# millisecond) appears twice for a tag across the logs; says which if one does
no_interval_twice() {
	python3 - "$@" <<'EOF'
import sys
seen = set()
for path in sys.argv[1:]:
    base = None
    for line in open(path):
        if line.startswith("#[BaseTime: "):
            base = float(line.split()[1])
        if line[0] in '#"':
            continue
        tag, start = line.split(",")[0:2]
        key = (tag, round(base + float(start), 3))
        if key in seen:
            sys.exit("  interval %s written twice" % (key,))
        seen.add(key)
EOF
}

# json_get FILE KEY: one top-level value of a JSON document
json_get() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"
}

# use_tmp: a fresh directory in $tmp ($TMPDIR or /tmp, named after the
# script: tb-NAME.XXXXXX); on exit, cleanup removes it and stops what pids names
pids=()
use_tmp() {
	tmp=$(mktemp -d -t "tb-$(basename "$0" .sh).XXXXXX")
	trap cleanup EXIT
}

# cleanup: runs on_cleanup if the script defines it (top_cli.sh: SIGTERM
# first), resumes and kills every process in pids, removes $tmp
cleanup() {
	local p
	if declare -F on_cleanup >/dev/null; then on_cleanup; fi
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}

# cpus_allowed PID or PID/task/TID or self: the CPUs it may run on, "0 1 2 5"
cpus_allowed() {
	local part out=()
	for part in $(awk '/^Cpus_allowed_list/ { gsub(",", " ", $2); print $2 }' "/proc/$1/status"); do
		if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
	done
	echo "${out[*]}"
}

# start_collector NAME [extra args]: tailbusd on bus NAME, segments in
# $tmp/NAME/seg, logs in $tmp/NAME/log, its output in $tmp/NAME/tailbusd.out;
# returns once it has written its startup lines. Sets $cpid (also in pids).
# The directories are 0755 so that another user can reach a segment
# (it_safety.sh); $tmp itself stays private unless a script opens it.
start_collector() {
	local name=$1
	shift
	mkdir -p "$tmp/$name/seg" "$tmp/$name/log"
	chmod 755 "$tmp/$name" "$tmp/$name/seg"
	# the output is appended to: only lines from this start say it is up (a
	# signal sent before tailbusd installs its handler is lost, as a
	# background job of a script ignores SIGINT)
	local before=0
	[[ -f $tmp/$name/tailbusd.out ]] && before=$(wc -l <"$tmp/$name/tailbusd.out")
	"$TAILBUSD" --bus "$name" --dir "$tmp/$name/seg" --log-dir "$tmp/$name/log" \
		--idle-us 200 --foreground "$@" >>"$tmp/$name/tailbusd.out" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	for _ in $(seq 100); do
		tail -n +$((before + 1)) "$tmp/$name/tailbusd.out" 2>/dev/null | grep -q "tailbusd: writing" &&
			return 0
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.05
	done
	echo "  tailbusd did not start:"; cat "$tmp/$name/tailbusd.out"; return 1
}

# stop_collector PID: SIGINT, then its exit status, said when not 0
stop_collector() {
	kill -INT "$1"
	local rc=0
	wait "$1" || rc=$?
	[[ $rc -eq 0 ]] || echo "  tailbusd exited with $rc"
	return $rc
}

emit() { # bus, then tb_emit args: tb_emit on the bus of start_collector
	local bus=$1
	shift
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_EMIT" --bus "$bus" "$@"
}

# logged_as_sent BUS [EXPECT]: every metric tb_emit --expect wrote to EXPECT
# (default $tmp/BUS/gexp) is in the bus's logs with the count, p99 and max it
# sent (exactly)
logged_as_sent() {
	local bus=$1 expect=${2:-$tmp/$1/gexp}
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/r.json" 2>/dev/null || true
	python3 - "$tmp/$bus/r.json" "$expect" <<'PY'
import json, sys
got = {t["tag"]: t for t in json.load(open(sys.argv[1]))["tags"]}
for line in open(sys.argv[2]):
    name, total, p50, p90, p99, p999, p9999, mx = line.split()
    t = got.get(name)
    if not t or t["count"] != int(total) or t["p99"] != int(p99) or t["max"] != int(mx):
        sys.exit("  %s: log %s, sent total %s p99 %s max %s" % (name, t, total, p99, mx))
PY
}

# need_root: 0 as root; else says so and fails, or is skipped (77, where the
# script sets check_skip_status=77) when TAILBUS_ALLOW_NO_ROOT=1
need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "  needs root"
		[[ ${TAILBUS_ALLOW_NO_ROOT:-0} == 1 ]] && return 77
		return 1
	fi
}
