#!/usr/bin/env bash
# options_cli.sh - the option conventions every program shares, as a user
# types them: durations and sizes with units where a bare number was all that
# was taken (--stall-every 1s, --duration 1s, --warmup 100ms, --window 10s,
# --rotate-seconds 1m, --rotate-bytes 10M) on a real collector and bus, --dir
# for load, --version on tailbus, every verb and tailbusd (meson's project
# version), and refusals of junk, negatives and overflow as one sentence
# "PROGRAM: bad value 'X' for --OPT: why" with exit 2 (1 for bad data),
# among them a tailbusd segment larger than the memory it could have.
#
# Needs: TAILBUS, TAILBUSD, TB_VERSION (meson's project version).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_VERSION:?}"
use_tmp
# the bus is found through --dir only
unset TAILBUS_DIR TAILBUS_BUS

VERBS=(top load replay export compare model clock env)

# status WANT, then a command: its exit status must be WANT; its output is
# in $tmp/out, its stderr in $tmp/err
status() {
	local want=$1 rc=0
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[[ $rc -eq $want ]] || { echo "  '$*': exit $rc, want $want"; cat "$tmp/err"; return 1; }
}

# refused PATTERN, then a command: exit 2 and one line on stderr matching PATTERN
refused() {
	local pattern=$1
	shift
	status 2 "$@" || return 1
	grep -qE "$pattern" "$tmp/err" || { echo "  '$*' said:"; cat "$tmp/err"; return 1; }
	[[ $(wc -l <"$tmp/err") -eq 1 ]] || { echo "  '$*': more than one line:"; cat "$tmp/err"; return 1; }
}

# ---- --version ----

versions() {
	status 0 "$TAILBUS" --version || return 1
	expect_eq "tailbus --version" "$(cat "$tmp/out")" "tailbus $TB_VERSION" || return 1
	local v
	for v in "${VERBS[@]}"; do
		status 0 "$TAILBUS" "$v" --version || return 1
		expect_eq "tailbus $v --version" "$(cat "$tmp/out")" "tailbus $TB_VERSION" || return 1
	done
	status 0 "$TAILBUSD" --version || return 1
	expect_eq "tailbusd --version" "$(cat "$tmp/out")" "tailbusd $TB_VERSION"
}
check "--version: tailbus, each of ${VERBS[*]}, tailbusd print meson's version and exit 0" versions

# ---- units on a real bus ----

# tailbusd with the spellings it refused: 1m, 10M, 500ms
BUS=opts
units_collector() {
	start_collector $BUS --interval 500ms --rotate-seconds 1m --rotate-bytes 10M || return 1
	grep -q "0.500 s intervals" "$tmp/$BUS/tailbusd.out" ||
		{ echo "  no 500 ms interval:"; cat "$tmp/$BUS/tailbusd.out"; return 1; }
}
check "tailbusd --interval 500ms --rotate-seconds 1m --rotate-bytes 10M starts" units_collector

# load with --dir (no TAILBUS_DIR) and durations in units: the run is what was asked
load_units() {
	status 0 "$TAILBUS" load --bus $BUS --dir "$tmp/$BUS/seg" --rate 2000 --duration 1s \
		--warmup 100ms --stall-every 500ms --stall-ns 1ms --service-ns 2us --json || return 1
	cp "$tmp/out" "$tmp/load.json"
	expect_eq collector_running "$(json_get "$tmp/load.json" collector_running)" True &&
		expect_eq duration_ns "$(json_get "$tmp/load.json" duration_ns)" 1000000000 &&
		expect_eq warmup_ns "$(json_get "$tmp/load.json" warmup_ns)" 100000000 &&
		expect_eq stall_every_ns "$(json_get "$tmp/load.json" stall_every_ns)" 500000000 &&
		expect_eq stall_ns "$(json_get "$tmp/load.json" stall_ns)" 1000000 &&
		expect_eq service_ns "$(json_get "$tmp/load.json" service_ns)" 2000
}
check "load --dir --duration 1s --warmup 100ms --stall-every 500ms: recorded through that bus" load_units

# bare numbers keep each option's unit
load_bare() {
	status 0 "$TAILBUS" load --record off --rate 2000 --duration 0.5 --warmup 0.1 \
		--stall-every 0.25 --stall-ns 1000000 --json || return 1
	expect_eq duration_ns "$(json_get "$tmp/out" duration_ns)" 500000000 &&
		expect_eq stall_every_ns "$(json_get "$tmp/out" stall_every_ns)" 250000000 &&
		expect_eq stall_ns "$(json_get "$tmp/out" stall_ns)" 1000000
}
check "load: bare --duration 0.5 and --stall-every 0.25 are seconds, --stall-ns 1000000 ns" load_bare

top_units() {
	status 0 "$TAILBUS" top --bus $BUS --dir "$tmp/$BUS/seg" --once --json --window 10s || return 1
	expect_eq window_s "$(json_get "$tmp/out" window_s)" 10 || return 1
	status 0 "$TAILBUS" top --bus $BUS --dir "$tmp/$BUS/seg" --once --window 2s || return 1
	# 2 s of 500 ms intervals
	grep -q "window 2s (4 intervals of 0.5 s)" "$tmp/out" || { echo "  header:"; head -1 "$tmp/out"; return 1; }
}
check "top --window 10s and 2s (four 500 ms intervals)" top_units

stop_collector "$cpid" || true

# replay's durations, on the log just written
replay_units() {
	local log
	log=$(ls "$tmp/$BUS"/log/*.hlog | head -1)
	status 0 "$TAILBUS" replay "$log" --warmup 100ms --start 0s --end 1m --format json || return 1
	status 0 "$TAILBUS" replay "$log" --warmup 0.1 --start 0 --end 60 --format json
}
check "replay --warmup 100ms --start 0s --end 1m, and the same bare" replay_units

# ---- refusals: one sentence naming the option, exit 2 ----

bad_values() {
	refused "^tailbusd: bad value '1e9s' for --interval: must be at most 1h$" \
		"$TAILBUSD" --bus x --log-dir "$tmp" --interval 1e9s &&
		refused "^tailbusd: bad value '-1' for --slots: must be at least 1$" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --slots -1 &&
		refused "^tailbusd: bad value '2000' for --series-reserve: must be at most 1024$" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --series-reserve 2000 &&
		refused "^tailbusd: --cpus names 2 CPUs for 1 drain threads" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --drain-threads 1 --cpus 0,1 &&
		refused "^tailbusd: bad value '99999999999999999999' for --keep: must be at most" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --keep 99999999999999999999 &&
		refused "^tailbusd: bad value '10MB' for --rotate-bytes: not a size" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --rotate-bytes 10MB &&
		refused "^tailbusd: bad value '5 s' for --idle-us: not a duration" \
			"$TAILBUSD" --bus x --log-dir "$tmp" --idle-us "5 s" &&
		refused "^tailbus load: bad value '-1' for --duration: must be at least 1ns$" \
			"$TAILBUS" load --record off --rate 10 --duration -1 &&
		refused "^tailbus load: bad value '1e9s' for --duration: must be at most 24h$" \
			"$TAILBUS" load --record off --rate 10 --duration 1e9s &&
		refused "^tailbus load: bad value '1x' for --stall-every: not a duration" \
			"$TAILBUS" load --record off --rate 10 --duration 1 --stall-every 1x &&
		refused "^tailbus load: bad value '18446744073709551617' for --seed: too large$" \
			"$TAILBUS" load --record off --rate 10 --duration 1 --seed 18446744073709551617 &&
		refused "^tailbus top: bad value '0' for --window: must be at least 1ns$" \
			"$TAILBUS" top --window 0 &&
		refused "^tailbus top: bad value '1e9s' for --window: must be at most 24h$" \
			"$TAILBUS" top --window 1e9s &&
		refused "^tailbus replay: bad value '-5' for --warmup: must not be negative$" \
			"$TAILBUS" replay x.hlog --warmup -5 &&
		refused "^tailbus replay: bad value '-x' for --start: not a duration" \
			"$TAILBUS" replay x.hlog --start -x &&
		refused "^tailbus replay: bad value 'soon' for --warmup: not a duration" \
			"$TAILBUS" replay x.hlog --warmup soon &&
		refused "^tailbus compare: bad value 'xml' for --format: want text or json$" \
			"$TAILBUS" compare a -- b --format xml &&
		refused "^tailbus model: bad value '-3' for --rate: must be at least 1$" \
			"$TAILBUS" model --rate -3 &&
		refused "^tailbus model: bad value '500ms' for --duration: must be at least 1s$" \
			"$TAILBUS" model --duration 500ms &&
		refused "^tailbus clock: bad value '1e3' for --samples: not a whole number$" \
			"$TAILBUS" clock --samples 1e3
}
check "junk, negatives, zero and overflow: 'bad value ... for --OPT: why', exit 2" bad_values

# a segment larger than the memory the machine can give it: refused at
# once (not after minutes of faulting it in), naming the option, before
# anything is created (no segment, lock, log directory)
too_large() {
	local d="$tmp/room" start=$SECONDS
	mkdir -p "$d"
	refused "^tailbusd: bad value '2147483648' for --ring-events: a segment of 16 rings \(--slots\) of 2147483648 events \(--ring-events\) would take 512.0 GiB, more than the .* of memory it can have$" \
		timeout 10 "$TAILBUSD" --bus big --dir "$d" --log-dir "$d/log" --foreground --ring-events 2147483648 &&
		refused "^tailbusd: bad value '1048576' for --ring-events: a segment of 100000 rings \(--slots\) of 1048576 events" \
			timeout 10 "$TAILBUSD" --bus big --dir "$d" --log-dir "$d/log" --foreground --slots 100000 --ring-events 1048576 &&
		refused "^tailbusd: bad value '4000000000' for --slots: a segment of 4000000000 rings \(--slots\) of 65536 events \(--ring-events\) would take" \
			timeout 10 "$TAILBUSD" --bus big --dir "$d" --log-dir "$d/log" --foreground --slots 4000000000 || return 1
	[[ -z $(ls -A "$d") ]] || { echo "  left behind: $(ls -A "$d")"; return 1; }
	[[ $((SECONDS - start)) -le 5 ]] || { echo "  took $((SECONDS - start)) s"; return 1; }
}
check "a segment larger than the memory available: refused at once, the option named, no file made" too_large

# an option no program knows, or one without its value: the first line says
# which, in the program's name, exit 2
unknown_options() {
	local v
	for v in "${VERBS[@]}"; do
		status 2 "$TAILBUS" "$v" --bogus || return 1
		expect_eq "$v --bogus" "$(head -1 "$tmp/err")" "tailbus $v: unknown option '--bogus'" || return 1
	done
	status 2 "$TAILBUSD" --bogus || return 1
	expect_eq "tailbusd --bogus" "$(head -1 "$tmp/err")" "tailbusd: unknown option '--bogus'" || return 1
	status 2 "$TAILBUSD" --bus || return 1
	expect_eq "tailbusd --bus" "$(head -1 "$tmp/err")" "tailbusd: option '--bus' needs a value" || return 1
	status 2 "$TAILBUS" load --duration || return 1
	expect_eq "load --duration" "$(head -1 "$tmp/err")" "tailbus load: option '--duration' needs a value" || return 1
	status 2 "$TAILBUS" compare a -- b --format || return 1
	expect_eq "compare --format" "$(cat "$tmp/err")" "tailbus compare: option '--format' needs a value"
}
check "unknown options and missing values: 'PROGRAM: unknown option', exit 2" unknown_options

# bad data is exit 1, not 2
bad_data() {
	status 1 "$TAILBUS" replay "$tmp/none.hlog" &&
		status 1 "$TAILBUS" top --bus nosuch --dir "$tmp" --once
}
check "a file or bus that is not there: exit 1" bad_data

summary options_cli
