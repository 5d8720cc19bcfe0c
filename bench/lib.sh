# shellcheck shell=bash
# bench/lib.sh - what the bench scripts share: the release build, the
# machine's load, the drain's CPUs kept for it, figures as text (quotients
# and differences too), the one median of a set of runs, and the one
# zero-drop search (its steps are each script's own).
# Sourced, never run:
#
#   . "$(dirname "$0")/../lib.sh"     (from bench/<section>/; bench/run: ./lib.sh)
#
# Sets bench_root (the repository). Every function reads its arguments or its
# standard input and writes its standard output; none changes the caller's
# options (each script sets its own `set -euo pipefail`).

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Run a command; show its output only when it fails, and then exit 1.
bench_quiet() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "$(basename "$0"): failed: $*" >&2
		exit 1
	fi
}

# The build directory: $BUILD_DIR, else `default`; a relative one is taken
# from the repository's root.
bench_build_dir() {
	local d=${BUILD_DIR:-$1}
	case $d in /*) ;; *) d="$bench_root/$d" ;; esac
	echo "$d"
}

# bench_build DIR [TARGET...]: DIR as a release build of the repository
# (set up, or reconfigured if it was not release), then the targets built.
bench_build() {
	local build=$1
	shift
	if [ -f "$build/build.ninja" ]; then
		bench_quiet meson configure "$build" -Dbuildtype=release
	else
		bench_quiet meson setup "$build" "$bench_root" --buildtype=release
	fi
	[ $# -eq 0 ] || bench_quiet ninja -C "$build" "$@"
}

# The load average over 1, 5 and 15 minutes.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# Other processes that have kept a CPU busy for a minute or more (lifetime
# %CPU >= 50): they take turns with the benchmark on a machine of few CPUs.
hogs() {
	ps -eo pid=,pcpu=,etimes=,comm= | awk -v me=$$ '$1 != me && $2 >= 50 && $3 >= 60 {
		printf "%s%s (pid %s, %s%% of a CPU for %d s)", (n++ ? ", " : ""), $4, $1, $2, $3 }'
}

# bench_isolate CPUS FILE: as root on a machine of more CPUs than CPUS,
# move the host's other threads off CPUS (bench/isolate.py, what a cpuset
# would do on a production host) and echo "yes"; else echo "no". The caller
# runs bench_unisolate FILE when done (its EXIT trap).
bench_isolate() {
	if [ "$(id -u)" -eq 0 ] && python3 "$bench_root/bench/isolate.py" --cpus "$1" --save "$2" 2>/dev/null; then
		echo "$(basename "$0"): the host's threads moved off CPU(s) $1; should this run be killed," \
			"give them back with: python3 bench/isolate.py --restore $2" >&2
		echo yes
	else
		echo no
	fi
}
bench_unisolate() { [ ! -f "$1" ] || python3 "$bench_root/bench/isolate.py" --restore "$1"; }

# A figure for reading: three significant digits below 100, whole numbers
# with thousands separators from 100; anything not a number as it is.
num() {
	awk -v x="$1" 'BEGIN {
		if (x !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { print x; exit }
		a = x < 0 ? -x : x
		if (a >= 100) { s = sprintf("%.0f", a); o = ""
			while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
			print (x < 0 ? "-" : "") s o; exit }
		if (a >= 10) printf "%.1f\n", x; else if (a >= 1) printf "%.2f\n", x; else printf "%.3g\n", x
	}'
}

# A rate in events/s as M events/s for reading (num's figures).
mevents() { num "$(awk -v x="$1" 'BEGIN { print x / 1e6 }')"; }

# quotient A B DIGITS: A / B with DIGITS decimals, or n/a unless B > 0.
quotient() {
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { if (b > 0) printf "%." d "f", a / b; else print "n/a" }'
}

# difference A B: A - B with two decimals.
difference() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

# The median of v[1..n], sorted: the middle value, or the mean of the two
# middle ones when n is even. An awk function, for scripts that want more
# than median_min_max gives (awk "$BENCH_MEDIAN_AWK"' ... median(v, NR) ...').
BENCH_MEDIAN_AWK='function median(v, n) {
	return n % 2 ? v[(n + 1) / 2] : sprintf("%.15g", (v[n / 2] + v[n / 2 + 1]) / 2) }'

# Numbers on stdin, one a line -> "median min max" (nothing for none).
median_min_max() {
	sort -g | awk "$BENCH_MEDIAN_AWK"'
		{ v[NR] = $1 } END { if (NR) printf "%s %s %s", median(v, NR), v[1], v[NR] }'
}

# A step of a zero-drop search (zero_drop_search's STEP): "drop"
# when any event was dropped, "slow" when the producers attempted less than
# 80% of what the rate asked of them (they could not hold it), else "ok".
step_verdict() { # attempted dropped rate_per_producer producers elapsed_ns
	awk -v a="$1" -v d="$2" -v r="$3" -v n="$4" -v el="$5" 'BEGIN {
		if (d > 0) print "drop"; else if (a < 0.8 * r * n * el / 1e9) print "slow"; else print "ok" }'
}

# zero_drop_search N START CAP HALVINGS BISECTIONS TRIES STEP [ARG...]
# The zero-drop search of bench/bus/run, bench/bus/scaling and bench/prom/run:
# the highest rate at which N producers, each paced at the same rate, drop
# nothing. `STEP [ARG...] RATE` runs one step at RATE events/s a producer
# and prints step_verdict's word. A rate passes when one of TRIES tries is
# ok; a slow try fails it at once (the producers cannot hold it, so another
# try would not either). From START events/s (all producers) the rate
# doubles while the doubled rate stays within CAP (all producers), or, when
# START fails, halves until one passes, HALVINGS times at most; then the gap
# between the highest rate passed and the lowest failed is halved
# BISECTIONS times. Prints "RATE BOUND": RATE all producers together (0 when
# none passed), BOUND what stopped the search: drops, producers (they could
# not hold a rate that failed) or cap. A STEP that fails fails the search.
zero_drop_search() {
	local n=$1 start=$2 cap=$3 halvings=$4 bisections=$5 tries=$6 lo=0 hi=0 r k v bound=drops
	shift 6
	r=$(awk -v s="$start" -v n="$n" 'BEGIN { printf "%.0f", s / n }')
	v=$(zero_drop_try "$tries" "$@" "$r") || return 1
	if [ "$v" = ok ]; then
		lo=$r
		while :; do
			r=$((2 * r))
			if [ $((r * n)) -gt "$cap" ]; then bound=cap; break; fi
			v=$(zero_drop_try "$tries" "$@" "$r") || return 1
			if [ "$v" = ok ]; then lo=$r; else hi=$r; break; fi
		done
	else
		hi=$r
		for ((k = 0; k < halvings && r > 1; k++)); do
			r=$((r / 2))
			v=$(zero_drop_try "$tries" "$@" "$r") || return 1
			if [ "$v" = ok ]; then lo=$r; break; fi
			hi=$r
		done
	fi
	if [ "$v" = slow ]; then bound=producers; fi
	if [ "$lo" -gt 0 ] && [ "$hi" -gt 0 ]; then
		for ((k = 0; k < bisections; k++)); do
			r=$(((lo + hi) / 2))
			v=$(zero_drop_try "$tries" "$@" "$r") || return 1
			if [ "$v" = ok ]; then lo=$r; continue; fi
			hi=$r
			if [ "$v" = slow ]; then bound=producers; fi
		done
	fi
	echo "$((lo * n)) $bound"
}

# zero_drop_try TRIES STEP [ARG...] RATE: zero_drop_search's tries of one
# rate; prints the last try's verdict (ok when one passed).
zero_drop_try() {
	local tries=$1 t v=""
	shift
	for ((t = 0; t < tries; t++)); do
		v=$("$@") || { echo "zero_drop_search: a step failed: $*" >&2; return 1; }
		[ "$v" = drop ] || break
	done
	case $v in
	ok | drop | slow) echo "$v" ;;
	*) echo "zero_drop_search: a step said '$v', not ok, drop or slow: $*" >&2; return 1 ;;
	esac
}
