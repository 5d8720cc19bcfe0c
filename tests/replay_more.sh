#!/usr/bin/env bash
# replay_more.sh - `tailbus replay` beyond the summary: warm-up discard and
# steady-state detection, the per-interval series, coordinated-omission
# correction (and its refusal on open-loop data), and the SVG plots.
#
# Needs: TAILBUS (the binary), TB_GEN_RUNS (tests/gen_runs, writes the logs),
# TB_GOLDEN (tests/golden: raw.hlog is the "raw" fixture as a log).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?path of the tailbus binary}"
: "${TB_GEN_RUNS:?path of the gen_runs test program}"
: "${TB_GOLDEN:?golden outputs directory}"
use_tmp

# A run whose first 10 of 30 intervals are 10 times slower: an obvious warm-up.
WARM="$tmp/warm.hlog"
"$TB_GEN_RUNS" "$WARM" --intervals 30 --samples 5000 --warmup 10 --warmup-factor 10
# The same with two tags, for the plots.
"$TB_GEN_RUNS" "$tmp/two.hlog" --intervals 30 --samples 2000 --warmup 10 --warmup-factor 10 \
	--tag svc --tag db

# --- warm-up ---
warmup_auto() {
	"$TAILBUS" replay "$WARM" --warmup auto --format json >"$tmp/wa.json" || return 1
	expect_eq warmup_s "$(json_field "$tmp/wa.json" "" warmup_s)" 10.0 &&
		expect_eq warmup_intervals "$(json_field "$tmp/wa.json" "" warmup_intervals)" 10 &&
		expect_eq warmup_status "$(json_field "$tmp/wa.json" "" warmup_status)" found &&
		expect_eq intervals "$(json_field "$tmp/wa.json" "" intervals)" 20 &&
		expect_eq total "$(json_field "$tmp/wa.json" "" count)" 100000 || return 1
	"$TAILBUS" replay "$WARM" --warmup auto >"$tmp/wa.txt" || return 1
	grep -qx '(untagged): warm-up ends at 10.0 s (10 intervals discarded)' "$tmp/wa.txt" &&
		grep -qx '(untagged): 20 intervals, 100000 samples' "$tmp/wa.txt" || return 1
	"$TAILBUS" replay "$tmp/two.hlog" --warmup auto --tag db >"$tmp/wt.txt" || return 1
	grep -qx 'tag db: warm-up ends at 10.0 s (10 intervals discarded)' "$tmp/wt.txt"
}
check "--warmup auto ends the warm-up at the 11th interval of an obvious warm-up" warmup_auto

warmup_same_as_range() {
	"$TAILBUS" replay "$WARM" --start 10 --format json >"$tmp/r10.json" || return 1
	python3 - "$tmp/wa.json" "$tmp/r10.json" <<'EOF'
import json, sys
a, b = (json.load(open(p))["tags"][0] for p in sys.argv[1:3])
for k in ("intervals", "count", "min", "p50", "p90", "p99", "p99_9", "p99_99", "max", "mean"):
    assert a[k] == b[k], (k, a[k], b[k])
EOF
}
check "the steady part merges to the figures of --start 10" warmup_same_as_range

warmup_fixed() {
	"$TAILBUS" replay "$WARM" --warmup 5 --format json >"$tmp/w5.json" || return 1
	expect_eq warmup_s "$(json_field "$tmp/w5.json" "" warmup_s)" 5.0 &&
		expect_eq discarded "$(json_field "$tmp/w5.json" "" warmup_intervals)" 5 &&
		expect_eq status "$(json_field "$tmp/w5.json" "" warmup_status)" fixed &&
		expect_eq intervals "$(json_field "$tmp/w5.json" "" intervals)" 25 || return 1
	"$TAILBUS" replay "$WARM" --warmup 0 --format json >"$tmp/w0.json" || return 1
	expect_eq "0 s" "$(json_field "$tmp/w0.json" "" intervals)" 30 || return 1
	"$TAILBUS" replay "$WARM" --warmup 7.5 | grep -qx '(untagged): warm-up ends at 7.5 s (8 intervals discarded)'
}
check "--warmup SECONDS discards the intervals starting within SECONDS of the first" warmup_fixed

warmup_all() {
	local rc=0
	"$TAILBUS" replay "$WARM" --warmup 1000 >/dev/null 2>"$tmp/all.err" || rc=$?
	expect_eq status "$rc" 1 &&
		expect_eq message "$(cat "$tmp/all.err")" "tailbus replay: --warmup discarded every interval of the given files"
}
check "a --warmup longer than the run says it discarded everything, exit 1" warmup_all

warmup_too_few() {
	"$TB_GEN_RUNS" "$tmp/short.hlog" --intervals 8 --samples 1000 --warmup 2 --warmup-factor 10
	"$TAILBUS" replay "$tmp/short.hlog" --warmup auto --format json >"$tmp/s.json" || return 1
	expect_eq status "$(json_field "$tmp/s.json" "" warmup_status)" not_enough_intervals &&
		expect_eq warmup_s "$(json_field "$tmp/s.json" "" warmup_s)" None &&
		expect_eq intervals "$(json_field "$tmp/s.json" "" intervals)" 8 || return 1
	"$TAILBUS" replay "$tmp/short.hlog" --warmup auto |
		grep -q '^(untagged): not enough intervals to find a steady state (8 non-empty, the rule needs 10); nothing discarded$'
}
check "too few intervals: 'not enough intervals to find a steady state', nothing discarded" warmup_too_few

warmup_never_steady() {
	"$TB_GEN_RUNS" "$tmp/drift.hlog" --intervals 30 --samples 1000 --ramp 100
	"$TAILBUS" replay "$tmp/drift.hlog" --warmup auto --format json >"$tmp/n.json" || return 1
	expect_eq status "$(json_field "$tmp/n.json" "" warmup_status)" no_steady_state &&
		expect_eq intervals "$(json_field "$tmp/n.json" "" intervals)" 30 || return 1
	"$TAILBUS" replay "$tmp/drift.hlog" --warmup auto | grep -q '^(untagged): no steady state found'
}
check "a run that drifts to the end (a leak): no steady state found, nothing discarded" warmup_never_steady

warmup_csv_hgrm() {
	"$TAILBUS" replay "$WARM" --warmup auto --format csv >"$tmp/w.csv" 2>"$tmp/w.err" || return 1
	expect_eq header "$(head -1 "$tmp/w.csv")" \
		"tag,intervals,count,min,p50,p90,p99,p99_9,p99_99,max,mean,insufficient,warmup_s,warmup_intervals" &&
		expect_eq tail "$(sed -n 2p "$tmp/w.csv" | cut -d, -f13-)" "10.000,10" || return 1
	"$TAILBUS" replay "$WARM" --warmup auto --format hgrm >"$tmp/w.hgrm" 2>"$tmp/wh.err" || return 1
	grep -q 'Total count    =       100000' "$tmp/w.hgrm" &&
		grep -q 'warm-up ends at 10.0 s (10 intervals discarded)' "$tmp/wh.err"
}
check "csv carries warmup columns; hgrm merges the steady part and notes the warm-up on stderr" warmup_csv_hgrm

json_stable() {
	"$TAILBUS" replay "$WARM" --format json >"$tmp/plain.json" || return 1
	python3 - "$tmp/plain.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["tags"][0]
old = ["tag", "intervals", "count", "min", "p50", "p90", "p99", "p99_9", "p99_99", "max",
       "mean", "insufficient"]
assert list(t)[:len(old)] == old, list(t)
assert (t["warmup_s"], t["warmup_intervals"], t["warmup_status"]) == (0, 0, "none"), t
EOF
}
check "json keeps its keys in order; the warm-up keys are additions" json_stable

# --- series ---
series_json() {
	"$TAILBUS" replay "$WARM" --series --warmup auto --format json >"$tmp/se.json" || return 1
	for i in 0 9 10 29; do
		"$TAILBUS" replay "$WARM" --start "$i" --end "$i" --format json >"$tmp/i$i.json" || return 1
	done
	python3 - "$tmp/se.json" "$tmp" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["tags"][0]
s = t["series"]
assert len(s) == 30, len(s)
assert [r["t"] for r in s] == [float(i) for i in range(30)]
assert [r["warmup"] for r in s] == [True] * 10 + [False] * 20
for i in (0, 9, 10, 29):
    one = json.load(open("%s/i%d.json" % (sys.argv[2], i)))["tags"][0]
    r = s[i]
    got = (r["count"], r["p50"], r["p99"], r["p99_9"], r["max"])
    want = (one["count"], one["p50"], one["p99"], one["p99_9"], one["max"])
    assert got == want, (i, got, want)
assert s[0]["p50"] > 8 * s[29]["p50"], "the warm-up is not 10x"
EOF
}
check "--series: one row per interval, equal to that interval replayed alone" series_json

series_csv_text() {
	"$TAILBUS" replay "$WARM" --series --warmup auto --format csv >"$tmp/se.csv" || return 1
	expect_eq header "$(head -1 "$tmp/se.csv")" "tag,t,start,length,count,p50,p99,p99_9,max,warmup" &&
		expect_eq rows "$(($(wc -l <"$tmp/se.csv") - 1))" 30 || return 1
	python3 - "$tmp/se.csv" "$tmp/se.json" <<'EOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
s = json.load(open(sys.argv[2]))["tags"][0]["series"]
for r, j in zip(rows, s):
    for k in ("count", "p50", "p99", "p99_9", "max"):
        assert int(r[k]) == j[k], (k, r, j)
    assert float(r["t"]) == j["t"] and (r["warmup"] == "1") == j["warmup"]
EOF
	"$TAILBUS" replay "$WARM" --series --warmup auto >"$tmp/se.txt" || return 1
	grep -Eq '^ +t +count +p50 +p99 +p99\.9 +max$' "$tmp/se.txt" &&
		expect_eq "warm-up rows" "$(grep -Ec '^ +[0-9.]+( +[0-9]+){5}  w$' "$tmp/se.txt")" 10 &&
		expect_eq "steady rows" "$(grep -Ec '^ +[0-9.]+( +[0-9]+){5}$' "$tmp/se.txt")" 20
}
check "--series in csv and text carries the same figures, warm-up rows marked" series_csv_text

# --- coordinated-omission correction ---
RAW="$TB_GOLDEN/raw.hlog"
mark='#[tailbus: open-loop: latencies are measured from the intended time]'
{ head -1 "$RAW"; echo "$mark"; sed -n '2,$p' "$RAW"; } >"$tmp/open.hlog"
{ head -1 "$RAW"; echo "$mark"; sed -n '2,5p' "$RAW"; sed -n '6p' "$RAW" | sed 's/^/Tag=lat.closed,/'; } \
	>"$tmp/open_closed.hlog"
{ cat "$tmp/open_closed.hlog"; sed -n '6p' "$RAW" | sed 's/^/Tag=lat,/'; } >"$tmp/open_mixed.hlog"

co_fixture() {
	"$TAILBUS" replay "$RAW" --correct-co 10000 --format json >"$tmp/co.json" 2>"$tmp/co.err" || return 1
	local want=(20000 1000 80019455 98041855 99811327 100007935 10000)
	local keys=(count p50 p90 p99 p99_9 max co_interval)
	for i in "${!keys[@]}"; do
		expect_eq "${keys[$i]}" "$(json_field "$tmp/co.json" "" "${keys[$i]}")" "${want[$i]}" || return 1
	done
	grep -q 'warning: .*raw.hlog has no open-loop mark; --correct-co assumes' "$tmp/co.err"
}
check "--correct-co 10000 on the raw fixture gives the 'cor' fixture (total 20000, p99 98041855)" co_fixture

co_refused() {
	local rc=0
	"$TAILBUS" replay "$tmp/open.hlog" --correct-co 10000 >"$tmp/ref.out" 2>"$tmp/ref.err" || rc=$?
	expect_eq rc "$rc" 1 && expect_eq stdout "$(cat "$tmp/ref.out")" "" &&
		grep -q -- "--correct-co refused for the untagged lines of .*open.hlog: the log is marked open-loop" "$tmp/ref.err" &&
		grep -q "intended send time" "$tmp/ref.err" || { cat "$tmp/ref.err"; return 1; }
	rc=0
	"$TAILBUS" replay "$tmp/open_mixed.hlog" --correct-co 10000 >/dev/null 2>"$tmp/mix.err" || rc=$?
	expect_eq "mixed rc" "$rc" 1 && grep -q "refused for tag 'lat' of " "$tmp/mix.err" || return 1
	"$TAILBUS" replay "$tmp/open.hlog" --format json >/dev/null # without correction: fine
}
check "--correct-co is refused, with the reason, on a log marked open-loop" co_refused

co_closed_tag() {
	"$TAILBUS" replay "$tmp/open_closed.hlog" --correct-co 10000 --format json >"$tmp/cc.json" \
		2>"$tmp/cc.err" || return 1
	expect_eq total "$(json_field "$tmp/cc.json" lat.closed count)" 20000 &&
		expect_eq p99 "$(json_field "$tmp/cc.json" lat.closed p99)" 98041855 &&
		expect_eq stderr "$(cat "$tmp/cc.err")" "" || return 1
	"$TAILBUS" replay "$tmp/open_mixed.hlog" --correct-co 10000 --tag lat.closed --format json \
		>"$tmp/cm.json" || return 1
	expect_eq "selected total" "$(json_field "$tmp/cm.json" lat.closed count)" 20000
}
check "--correct-co is allowed on '.closed' tags of an open-loop log" co_closed_tag

co_series() {
	"$TAILBUS" replay "$RAW" --correct-co 10000 --series --format json >"$tmp/cs.json" 2>/dev/null || return 1
	python3 - "$tmp/cs.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["tags"][0]["series"][0]
assert (r["count"], r["p99"]) == (20000, 98041855), r
EOF
}
check "the series shows corrected intervals when correcting" co_series

output_log_mark() {
	"$TAILBUS" replay "$tmp/open.hlog" --output-log "$tmp/re.hlog" >/dev/null || return 1
	grep -qxF "$mark" "$tmp/re.hlog" || return 1
	local rc=0
	"$TAILBUS" replay "$tmp/re.hlog" --correct-co 10000 >/dev/null 2>&1 || rc=$?
	expect_eq rc "$rc" 1
}
check "--output-log keeps the open-loop mark, so the rewritten log is refused too" output_log_mark

# A tailbusd-like open-loop log (untagged, with its env lines) merged with a Java-origin
# log of tag "java" (no mark): the rewritten log marks only the untagged lines
# open-loop, says where each tag came from and keeps the env lines.
output_log_per_tag() {
	{ head -1 "$RAW"; echo "$mark"; echo '#[env hostname=boxA]'; echo '#[env cpus=8]'
		sed -n '2,$p' "$RAW"; } >"$tmp/open_env.hlog"
	{ head -5 "$RAW"; sed -n '6p' "$RAW" | sed 's/^/Tag=java,/'; } >"$tmp/java_tag.hlog"
	"$TAILBUS" replay "$tmp/open_env.hlog" "$tmp/java_tag.hlog" --output-log "$tmp/pt.hlog" \
		>/dev/null 2>"$tmp/pt.err" || { cat "$tmp/pt.err"; return 1; }
	expect_eq stderr "$(cat "$tmp/pt.err")" "" &&
		grep -qxF '#[tailbus: open-loop untagged]' "$tmp/pt.hlog" &&
		! grep -qxF "$mark" "$tmp/pt.hlog" &&
		grep -qxF "#[tailbus: source: untagged file=$tmp/open_env.hlog]" "$tmp/pt.hlog" &&
		grep -qxF "#[tailbus: source: tag=java file=$tmp/java_tag.hlog]" "$tmp/pt.hlog" &&
		grep -qxF '#[env hostname=boxA]' "$tmp/pt.hlog" && grep -qxF '#[env cpus=8]' "$tmp/pt.hlog" ||
		{ head -12 "$tmp/pt.hlog" | cut -c1-100; return 1; }
	# the Java-origin tag may be corrected; the open-loop one is still refused
	"$TAILBUS" replay "$tmp/pt.hlog" --tag java --correct-co 10000 --format json >"$tmp/ptj.json" \
		2>"$tmp/ptj.err" || { cat "$tmp/ptj.err"; return 1; }
	expect_eq "java total" "$(json_field "$tmp/ptj.json" java count)" 20000 || return 1
	local rc=0
	"$TAILBUS" replay "$tmp/pt.hlog" --tag "" --correct-co 10000 >/dev/null 2>"$tmp/ptu.err" || rc=$?
	expect_eq "untagged rc" "$rc" 1 && grep -q 'refused for the untagged lines' "$tmp/ptu.err" || return 1
	# the env shown by replay is the kept one
	"$TAILBUS" replay "$tmp/pt.hlog" | grep -qx 'measured on (log header): hostname=boxA cpus=8'
}
check "--output-log marks open-loop per tag, keeps provenance and env; Java-origin tags may be corrected" output_log_per_tag

output_log_env_differs() {
	{ head -1 "$RAW"; echo '#[env hostname=boxB]'; sed -n '2,5p' "$RAW"
		sed -n '6p' "$RAW" | sed 's/^/Tag=b,/'; } >"$tmp/env_b.hlog"
	"$TAILBUS" replay "$tmp/open_env.hlog" "$tmp/env_b.hlog" --output-log "$tmp/ed.hlog" \
		>/dev/null 2>"$tmp/ed.err" || return 1
	grep -q "warning: $tmp/open_env.hlog and $tmp/env_b.hlog were measured on different machines" \
		"$tmp/ed.err" && ! grep -q 'boxB' "$tmp/ed.hlog" ||
		{ cat "$tmp/ed.err"; return 1; }
}
check "--output-log of inputs from different machines keeps the first's env and says so" output_log_env_differs

env_crlf() {
	sed 's/$/\r/' "$tmp/open_env.hlog" >"$tmp/open_env_crlf.hlog"
	"$TAILBUS" replay "$tmp/open_env_crlf.hlog" | grep -qx 'measured on (log header): hostname=boxA cpus=8' &&
		"$TAILBUS" replay "$tmp/open_env_crlf.hlog" --format json | grep -qF '"env":{"hostname":"boxA","cpus":"8"}'
}
check "the env lines of a log with CRLF line ends are read (text and json)" env_crlf

# --- plots ---
# svg_series FILE: the number of series paths, after checking the file parses
svg_series() {
	python3 - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
paths = root.findall(".//{http://www.w3.org/2000/svg}path[@class='series']")
assert all(p.get("d", "").startswith("M") for p in paths)
print(len(paths))
EOF
}

plots() {
	"$TAILBUS" replay "$tmp/two.hlog" --warmup auto --plot "$tmp/plots" >"$tmp/p.txt" || return 1
	local f
	for f in spectrum over-time_svc over-time_db; do
		[[ -s "$tmp/plots/$f.svg" ]] || { echo "  no $f.svg"; return 1; }
		grep -qx "plot: $tmp/plots/$f.svg" "$tmp/p.txt" || { echo "  $f.svg not listed"; return 1; }
	done
	expect_eq "spectrum series" "$(svg_series "$tmp/plots/spectrum.svg")" 2 &&
		expect_eq "over-time series" "$(svg_series "$tmp/plots/over-time_svc.svg")" 3 &&
		grep -q 'warm-up ends' "$tmp/plots/over-time_db.svg" &&
		grep -q '>99.99%<' "$tmp/plots/spectrum.svg" || return 1
	expect_eq "files" "$(ls "$tmp/plots" | wc -l)" 3
}
check "--plot writes a spectrum of every tag and p99/p99.9/max over time per tag, as valid SVG" plots

plots_untagged_json() {
	"$TAILBUS" replay "$WARM" --plot "$tmp/p2" --format json >"$tmp/p2.json" 2>"$tmp/p2.err" || return 1
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/p2.json" &&
		grep -qx "plot: $tmp/p2/over-time.svg" "$tmp/p2.err" &&
		expect_eq "series" "$(svg_series "$tmp/p2/over-time.svg")" 3 || return 1
	# the same input draws the same bytes
	"$TAILBUS" replay "$WARM" --plot "$tmp/p3" --format json >/dev/null 2>&1 &&
		cmp "$tmp/p2/spectrum.svg" "$tmp/p3/spectrum.svg"
}
check "plots keep json clean (paths on stderr) and are deterministic" plots_untagged_json

plot_odd_tag() {
	"$TB_GEN_RUNS" "$tmp/odd.hlog" --intervals 3 --samples 100 --tag 'a/b<&>'
	"$TAILBUS" replay "$tmp/odd.hlog" --plot "$tmp/p4" >/dev/null || return 1
	[[ -s "$tmp/p4/over-time_a%2Fb%3C%26%3E.svg" ]] &&
		expect_eq "series" "$(svg_series "$tmp/p4/spectrum.svg")" 1
}
check "a tag with odd characters gets a safe file name and escaped labels" plot_odd_tag

# --- usage ---
usage_errors() {
	local rc args
	for args in "--warmup soon" "--warmup -1" "--correct-co 0" "--correct-co 1e4" \
		"--series --format hgrm"; do
		rc=0
		# shellcheck disable=SC2086
		"$TAILBUS" replay "$WARM" $args >/dev/null 2>"$tmp/u.err" || rc=$?
		expect_eq "$args" "$rc" 2 || return 1
	done
	grep -q 'series' "$tmp/u.err"
}
check "bad --warmup, --correct-co and --series combinations are usage errors" usage_errors

# --- --start/--end as wall-clock times: the same instants in every file ---
# gen_log's StartTime is 2025-11-30T18:00:00Z (1764525600); its intervals start 0, 1, 2 ... s after.
wall_clock_bounds() {
	"$TB_GEN_LOG" "$tmp/wall.hlog" || return 1
	"$TAILBUS" replay "$tmp/wall.hlog" --format json --start 2 --end 4 >"$tmp/rel.json" || return 1
	"$TAILBUS" replay "$tmp/wall.hlog" --format json --start 2025-11-30T18:00:02Z \
		--end 2025-11-30T18:00:04.000Z >"$tmp/iso.json" || return 1
	"$TAILBUS" replay "$tmp/wall.hlog" --format json --start @1764525602 --end @1764525604 \
		>"$tmp/epoch.json" || return 1
	expect_eq "ISO bounds" "$(json_field "$tmp/iso.json" alpha count)" \
		"$(json_field "$tmp/rel.json" alpha count)" || return 1
	expect_eq "epoch bounds" "$(json_field "$tmp/epoch.json" alpha count)" \
		"$(json_field "$tmp/rel.json" alpha count)" || return 1
	expect_eq "intervals" "$(json_field "$tmp/iso.json" alpha intervals)" 3 || return 1
	local rc=0 bad
	for bad in 2025-11-30T18:00:02 2025-13-30T18:00:02Z 2025-02-31T18:00:02Z "@x" \
		"2025-11-30 18:00:02Z" 2025-11-30T18:00:02Zjunk; do
		rc=0
		"$TAILBUS" replay "$tmp/wall.hlog" --start "$bad" >/dev/null 2>"$tmp/w.err" || rc=$?
		expect_eq "--start '$bad'" "$rc" 2 || return 1
	done
}
check "--start/--end as UTC times select the same intervals as offsets" wall_clock_bounds

# --- --format prom-native: every sample in one bucket, at any schema ---
prom_native() {
	"$TB_GEN_LOG" "$tmp/native.hlog" || return 1
	"$TAILBUS" replay "$tmp/native.hlog" --format json >"$tmp/native.json" || return 1
	local schema tag want got
	for schema in 0 4 8; do
		"$TAILBUS" replay "$tmp/native.hlog" --format prom-native --schema "$schema" \
			>"$tmp/native.$schema" || return 1
		for tag in alpha beta; do
			want=$(json_field "$tmp/native.json" "$tag" count)
			got=$(awk -v t="$tag" '$1 == t { s += $5 } END { print s + 0 }' "$tmp/native.$schema")
			expect_eq "schema $schema $tag" "$got" "$want" || return 1
		done
		# bounds: UPPER = 2^(INDEX / 2^schema), LOWER that of INDEX - 1
		awk -v s="$schema" '$1 !~ /^#/ { n = 2 ^ s; u = 2 ^ ($2 / n); l = 2 ^ (($2 - 1) / n)
			if (($4 - u) ^ 2 > (1e-12 * u) ^ 2 || ($3 - l) ^ 2 > (1e-12 * l) ^ 2) { print "  bad bounds: " $0; bad = 1 } }
			END { exit bad }' "$tmp/native.$schema" || return 1
	done
	grep -q '^(untagged) ' "$tmp/native.0"
}
check "replay --format prom-native: every sample in one bucket, bounds 2^(i/2^S)" prom_native
native_refusals() {
	local rc=0
	"$TAILBUS" replay "$tmp/native.hlog" --format prom-native --schema 9 2>/dev/null || rc=$?
	expect_eq "--schema 9" "$rc" 2 || return 1
	rc=0
	"$TAILBUS" replay "$tmp/native.hlog" --schema 4 2>/dev/null || rc=$?
	expect_eq "--schema without prom-native" "$rc" 2
}
check "replay --schema out of 0..8, or without prom-native, is a usage error" native_refusals

summary replay_more
