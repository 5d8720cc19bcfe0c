# shellcheck shell=bash
# bench/bus/measure_xproc.sh - bench/bus/run's cross-process measurements:
# the real tailbusd and the ceiling against flooding producers, one producer
# at full speed pair by pair ($work/flood.tsv, $work/trip.tsv), then the
# zero-drop search for each producer count ($work/search.tsv, zero_drop and
# zero_bound).
# Sourced by bench/bus/run, never run; reads its settings and sets td_pid
# and seg, the tailbusd and segment that run's cleanup stops and removes.
# ---- cross-process: tailbusd on the collector's CPU, producers on the others ----
# run and wait ns of tailbusd's consumer: its drain threads (tb-drainN), which
# live as long as it does; the run loop, closer and writer sleep (their share
# is bench/bus/pauses's housekeeping figure)
schedstat() {
	local t run=0 wait=0 r w
	for t in /proc/"$1"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in tb-drain*) ;; *) continue ;; esac
		read -r r w _ <"$t/schedstat" 2>/dev/null || continue
		run=$((run + r)) wait=$((wait + w))
	done
	echo "$run $wait"
}
# tailbusd on a fresh segment in a fresh directory (sets seg, td_pid, td_logs)
td_start() { # name [tailbusd flags...]
	local name=$1
	shift
	seg=$(mktemp -d /dev/shm/tailbus-bench-bus.XXXXXX)
	td_logs="$work/logs.$name"
	local out="$work/tailbusd.$name.out"
	"$tailbusd" --bus flood --dir "$seg" --log-dir "$td_logs" --cpu "$collector_cpu" --fresh \
		--foreground "${td_lanes[@]}" "${td_flags[@]}" "$@" >"$out" 2>&1 &
	td_pid=$!
	for _ in $(seq 100); do
		grep -q 'rings of' "$out" 2>/dev/null && break
		kill -0 "$td_pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q 'rings of' "$out"; then
		echo "tailbusd did not start:" >&2
		cat "$out" >&2
		exit 1
	fi
}
td_stop() {
	sleep 0.5 # tailbusd drains the rest and frees the slots
	kill -INT "$td_pid"
	wait "$td_pid" || true
	td_pid=""
	rm -rf "$seg"
	seg=""
}
# mode (given|now|start) run [flood flags...] -> one TSV row in $work/flood.tsv
flood_run() {
	local mode=$1 run=$2
	shift 2
	td_start "$mode.$run"
	local s0 s1 line
	s0=$(schedstat "$td_pid")
	line=$(TAILBUS_DIR="$seg" taskset -c "$producer_cpu" "$bin/flood" --bus flood \
		--seconds "$flood_s" "$@")
	s1=$(schedstat "$td_pid")
	td_stop
	# sidecar: events the collector recorded (per ring), drops it saw, late events
	local side
	side=$(awk -F, '$2 == "ring" { e += $4; d += $5 } $2 == "metric" { l += $7 }
		END { printf "%d\t%d\t%d", e, d, l }' "$td_logs"/*.health.csv)
	read -r a w d el frun fwait fo <<<"$line"
	read -r r0 w0 <<<"$s0"
	read -r r1 w1 <<<"$s1"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$run" "$a" "$w" "$d" \
		"$el" "$frun" "$fwait" $((r1 - r0)) $((w1 - w0)) "$side" "$*" "$fo" >>"$work/flood.tsv"
}
# The ceiling at full speed, one producer: the same row, with the consumer's
# schedstat where tailbusd's is and its copied count where the sidecar's is.
ceiling_run() { # mode run [ceiling flags...]
	local line a w d el frun fwait cons crun cwait mode=$1
	shift
	line=$("$bin/ceiling" --seconds "$flood_s" --cpus "$producer_cpu" --consumer-cpu "$collector_cpu" "${@:2}")
	read -r a w d el frun fwait cons crun cwait <<<"$line"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\t\n' "$mode" "$1" "$a" "$w" "$d" \
		"$el" "$frun" "$fwait" "$crun" "$cwait" "$cons" "$d" >>"$work/flood.tsv"
}
: >"$work/flood.tsv"
td_flags=()
# Every tailbusd here but the "folded" runs is started without fold lanes:
# a SPAN that finds the ring full is dropped, so that these figures are the
# ring's and the collector's alone, comparable with the ceiling's (which
# drops) and with runs before fold lanes. The "folded" runs are tailbusd as
# it runs by default: what does not fit is folded, and "dropped" is lost.
td_lanes=(--fold-lanes 0)
# Each tailbusd run is next to its ceiling run, the two in turn first, so that a
# ratio compares runs seconds apart: how fast lines move between the two vCPUs
# depends on where the host has put them, and that changes between minutes.
given_pair() { flood_run given "$1"; }
ceiling_pair() { ceiling_run ceiling "$1"; }
evict_pair() { td_flags=(--evict-lines); flood_run evict "$1"; td_flags=(); }
ceiling_evict_pair() { ceiling_run ceiling_evict "$1" --evict; }
folded_run() { td_lanes=(); flood_run folded "$1"; td_lanes=(--fold-lanes 0); }
: >"$work/trip.tsv"
for r in $(seq "$flood_runs"); do
	echo "cross-process run $r/$flood_runs: given timestamps and the ceiling, each again with the lines read evicted, tb_now() per event ($flood_s s each) ..." >&2
	# a line's round trip between the two CPUs, now
	printf '%s\t%s\n' "$r" "$("$bin/linetrip" --cpus "$producer_cpu,$collector_cpu" | cut -d' ' -f1)" >>"$work/trip.tsv"
	if [ $((r % 2)) -eq 1 ]; then
		given_pair "$r"; ceiling_pair "$r"; evict_pair "$r"; ceiling_evict_pair "$r"
	else
		ceiling_pair "$r"; given_pair "$r"; ceiling_evict_pair "$r"; evict_pair "$r"
	fi
	flood_run now "$r" --now
	folded_run "$r"
done
echo "cross-process: tb_now() per event, flooding before tailbusd follows the ring ..." >&2
flood_run start 1 --now --no-wait

# ---- zero-drop search: N producers at a fixed rate each ----
# One step: kind (bus|ceiling) N rate (per producer) -> prints its verdict
# (ok|drop|slow) and adds one row to $work/search.tsv: kind N rate attempted
# written dropped elapsed producers' run wait, consumer's run wait, verdict
search_step() {
	local kind=$1 n=$2 rate=$3 line a w d el frun fwait cons crun cwait s0 s1 r0 w0 r1 w1 step
	local flags=(--procs "$n" --rate "$rate" --seconds "$step_s" --cpus "$producer_cpus")
	[ "$n" -gt "$n_pcpus" ] && flags+=(--yield)
	if [ "$kind" = bus ]; then
		s0=$(schedstat "$td_pid")
		line=$(TAILBUS_DIR="$seg" "$bin/flood" --bus flood "${flags[@]}") || line=""
		s1=$(schedstat "$td_pid")
		read -r a w d el frun fwait _ <<<"$line"
		read -r r0 w0 <<<"$s0"
		read -r r1 w1 <<<"$s1"
		crun=$((r1 - r0)) cwait=$((w1 - w0))
	else
		line=$("$bin/ceiling" "${flags[@]}" --consumer-cpu "$collector_cpu") || line=""
		read -r a w d el frun fwait cons crun cwait <<<"$line"
	fi
	if [ -z "$line" ]; then
		echo "$kind: a step of $n producers at $rate events/s failed" >&2
		exit 1
	fi
	step=$(step_verdict "$a" "$d" "$rate" "$n" "$el")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$n" "$rate" "$a" "$w" "$d" \
		"$el" "$frun" "$fwait" "$crun" "$cwait" "$step" >>"$work/search.tsv"
	echo "$step"
}
declare -A zero_drop zero_bound
# kind N -> zero_drop[kind.N] (events/s, all producers; 0: none found) and
# zero_bound[kind.N]: what stopped it (drops, the producers' own pace, the cap)
search() {
	local kind=$1 n=$2 found rate bound
	found=$(zero_drop_search "$n" "$search_start" "$search_cap" "$search_halvings" "$bisections" "$tries" \
		search_step "$kind" "$n")
	read -r rate bound <<<"$found"
	zero_drop[$kind.$n]=$rate
	zero_bound[$kind.$n]=$bound
}
: >"$work/search.tsv"
for n in "${counts[@]}"; do
	echo "zero-drop search, $n producer(s) on CPU(s) $producer_cpus: tailbusd, then the ceiling ($step_s s steps) ..." >&2
	td_start "search.$n" --slots 64
	search bus "$n"
	td_stop
	search ceiling "$n"
done
