#!/usr/bin/env bash
# replay_cli.sh - `tailbus replay` as a user runs it: formats, selections,
# rewriting, and one clear sentence (and a non-zero exit) for each bad input
# while every good line is still used.
#
# Needs: TAILBUS (the binary), TB_FIXTURES (tests/fixtures/hdrhistogram),
# TB_GOLDEN (tests/golden).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The .hgrm header's date is in the local time zone, as Java's is.
export TZ=UTC

: "${TAILBUS:?path of the tailbus binary}"
: "${TB_FIXTURES:?fixtures directory}"
: "${TB_GOLDEN:?golden outputs directory}"
use_tmp

V2="$TB_FIXTURES/jHiccup-2.0.7S.logV2.hlog"
V3="$TB_FIXTURES/jHiccup-2.0.7S.logV3.hlog"
TAGGED="$TB_FIXTURES/tagged-Log.logV2.hlog"

# --- JSON: EXPECTED.md's figures with a fresh 3-digit merge histogram ---
json_expected() {
	"$TAILBUS" replay "$V2" --digits 3 --format json >"$tmp/v2.json" || return 1
	local want=(62 48761 327935 409855 1427111935 1745879039 1796210687 1796210687)
	local keys=(intervals count p50 p90 p99 p99_9 p99_99 max)
	for i in "${!keys[@]}"; do
		expect_eq "${keys[$i]}" "$(json_field "$tmp/v2.json" "" "${keys[$i]}")" "${want[$i]}" || return 1
	done
	expect_eq insufficient "$(json_field "$tmp/v2.json" "" insufficient)" "p99_9,p99_99"
}
check "json figures equal EXPECTED.md (jHiccup V2, --digits 3)" json_expected

# --- default merge: HistogramLogProcessor's layout (first interval's) ---
json_default() {
	"$TAILBUS" replay "$V2" --format json >"$tmp/v2d.json" || return 1
	expect_eq p50 "$(json_field "$tmp/v2d.json" "" p50)" 344063 &&
		expect_eq max "$(json_field "$tmp/v2d.json" "" max)" 1803550719 &&
		expect_eq total "$(json_field "$tmp/v2d.json" "" count)" 48761
}
check "default merge keeps the log's layout (as HistogramLogProcessor)" json_default

# --- tags: each reported, --tag selects one ---
tags() {
	"$TAILBUS" replay "$V3" --format json >"$tmp/v3.json" || return 1
	local n
	n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tags"]))' "$tmp/v3.json")
	expect_eq tags "$n" 5 || return 1
	"$TAILBUS" replay "$V3" --tag a7.133a --digits 3 --format json >"$tmp/a7.json" || return 1
	expect_eq total "$(json_field "$tmp/a7.json" a7.133a count)" 754 &&
		expect_eq p99_9 "$(json_field "$tmp/a7.json" a7.133a p99_9)" 442623
}
check "tags are reported separately; --tag selects one" tags

# --- time range: 5..20 s after StartTime ---
range() {
	"$TAILBUS" replay "$V2" --digits 3 --start 5 --end 20 --format json >"$tmp/r.json" || return 1
	expect_eq intervals "$(json_field "$tmp/r.json" "" intervals)" 15 &&
		expect_eq total "$(json_field "$tmp/r.json" "" count)" 11664 &&
		expect_eq p99_9 "$(json_field "$tmp/r.json" "" p99_9)" 1536163839
}
check "--start 5 --end 20 selects the reference's 15 intervals" range

# --- several files merge into one view ---
multi() {
	"$TAILBUS" replay "$V2" "$V2" --digits 3 --format json >"$tmp/m.json" || return 1
	expect_eq total "$(json_field "$tmp/m.json" "" count)" 97522 &&
		expect_eq intervals "$(json_field "$tmp/m.json" "" intervals)" 124 &&
		expect_eq p50 "$(json_field "$tmp/m.json" "" p50)" 327935
}
check "two files merge into one histogram per tag" multi

# --- text and csv carry the same figures and the sufficiency mark ---
text_csv() {
	"$TAILBUS" replay "$TAGGED" --tag A >"$tmp/t.txt" || return 1
	grep -q '^tag A: 21 intervals, 16145 samples$' "$tmp/t.txt" &&
		grep -Eq '^  p99\.9 +[0-9]+ \*$' "$tmp/t.txt" &&
		grep -q 'fewer than 100 samples beyond' "$tmp/t.txt" || return 1
	"$TAILBUS" replay "$TAGGED" --tag A --digits 3 --format csv >"$tmp/t.csv" || return 1
	expect_eq csv "$(sed -n 2p "$tmp/t.csv" | cut -d, -f1-10)" \
		"A,21,16145,0,344319,409855,1385168895,1536163839,1544552447,1544552447"
}
check "text marks thin percentiles; csv has the figures" text_csv

# --- hgrm: Java's distribution text ---
hgrm() {
	"$TAILBUS" replay "$TAGGED" --tag A --format hgrm --unit-ratio 1 >"$tmp/a.hgrm" || return 1
	sed -n 3p "$tmp/a.hgrm" | grep -q '^       Value     Percentile TotalCount 1/(1-Percentile)$' &&
		grep -q '^#\[Max     = 1551892479.00, Total count    =        16145\]$' "$tmp/a.hgrm" &&
		grep -q '^#\[Buckets = ' "$tmp/a.hgrm"
}
check "hgrm prints the Java distribution with its footer" hgrm

# --- hgrm and hgrm-csv byte for byte as the Java reference printed them ---
hgrm_golden() {
	local g="$TB_GOLDEN"
	# the two header lines are pinned by the next check
	"$TAILBUS" replay "$g/raw.hlog" --format hgrm --unit-ratio 1 | tail -n +3 | cmp - "$g/raw.hgrm" &&
		"$TAILBUS" replay "$g/raw.hlog" --format hgrm-csv --unit-ratio 1 | tail -n +3 |
		cmp - "$g/raw.csv" &&
		"$TAILBUS" replay "$g/raw.hlog" --format hgrm --unit-ratio 1000 | tail -n +3 |
		cmp - "$g/raw_us.hgrm"
}
check "hgrm, hgrm-csv and --unit-ratio equal the Java reference's text" hgrm_golden

# --- hgrm by default: the .hgrm file HistogramLogProcessor -o writes, headers and ms ---
hgrm_java_file() {
	"$TAILBUS" replay "$TB_GOLDEN/raw.hlog" --format hgrm >"$tmp/raw.hgrm" || return 1
	cmp "$tmp/raw.hgrm" "$TB_GOLDEN/raw_java_o.hgrm" || { diff "$TB_GOLDEN/raw_java_o.hgrm" "$tmp/raw.hgrm" | head; return 1; }
	"$TAILBUS" replay "$V2" --start 5 --end 20 --format hgrm | head -2 >"$tmp/h2" || return 1
	expect_eq range "$(head -1 "$tmp/h2")" \
		"#[Overall percentile distribution between 5.000 and 20.000 seconds (relative to StartTime)]" &&
		expect_eq start "$(sed -n 2p "$tmp/h2")" \
			"#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]" &&
		"$TAILBUS" replay --help | grep -q -- "--unit-ratio, default 1000000 as in HistogramLogProcessor"
}
check "--format hgrm is HistogramLogProcessor's .hgrm file: header lines, ms by default" hgrm_java_file

# --- logs as they come: stdin, gzip, trailing blanks and CRLF ---
inputs_as_they_come() {
	"$TAILBUS" replay "$TAGGED" --format json >"$tmp/plain.json" || return 1
	gzip -c "$TAGGED" >"$tmp/tagged.hlog.gz"
	cp "$tmp/tagged.hlog.gz" "$tmp/tagged-gz-without-the-name.hlog"
	sed 's/$/  \r/' "$TAGGED" >"$tmp/crlf.hlog"
	# two gzip members, one after the other, read as one text
	{ head -5 "$TAGGED" | gzip -c; tail -n +6 "$TAGGED" | gzip -c; } >"$tmp/members.gz"
	local f
	for f in tagged.hlog.gz tagged-gz-without-the-name.hlog crlf.hlog members.gz; do
		"$TAILBUS" replay "$tmp/$f" --format json >"$tmp/$f.json" 2>"$tmp/$f.err" ||
			{ echo "  $f:"; head -3 "$tmp/$f.err"; return 1; }
		cmp -s "$tmp/plain.json" "$tmp/$f.json" || { echo "  $f: figures differ"; return 1; }
	done
	"$TAILBUS" replay - --format json <"$TAGGED" >"$tmp/stdin.json" &&
		cmp "$tmp/plain.json" "$tmp/stdin.json" &&
		gzip -c "$TAGGED" | "$TAILBUS" replay - --format json >"$tmp/stdin-gz.json" &&
		cmp "$tmp/plain.json" "$tmp/stdin-gz.json"
}
check "stdin (-), gzip (by its magic, one or two members), trailing blanks and CRLF read as the plain log" inputs_as_they_come

bad_gzip() {
	gzip -c "$TAGGED" | head -c 300 >"$tmp/cut.hlog.gz"
	local rc=0
	"$TAILBUS" replay "$tmp/cut.hlog.gz" >/dev/null 2>"$tmp/cut.err" || rc=$?
	expect_eq rc "$rc" 1 &&
		grep -q "cannot read $tmp/cut.hlog.gz: not valid gzip data (corrupt or cut short)" "$tmp/cut.err" ||
		{ cat "$tmp/cut.err"; return 1; }
}
check "a gzip file cut short is named, exit 1" bad_gzip

# --- DoubleHistogram payloads: refused by name, file and line ---
# The line is what Java's HistogramLogWriter writes for a DoubleHistogram(3) holding
# 0.5 .. 2.48 (tests/java/WriteDoubleLog.java; interop_java.sh checks it live).
DOUBLE_LINE='0.000,1.000,0.000,DHISTwAAAAMAAAAAAAAAAhyEkxQAAAAzeNqTaZkszMDAcJIBApihNCOEkv9v7wBh/edn8mXyJxGqAqE6iZhUHYJQKEwkDQClVxZI'
double_histogram() {
	{ head -5 "$TAGGED"; echo "$DOUBLE_LINE"; } >"$tmp/double.hlog"
	local rc=0
	"$TAILBUS" replay "$tmp/double.hlog" >/dev/null 2>"$tmp/dh.err" || rc=$?
	expect_eq rc "$rc" 1 &&
		expect_eq message "$(cat "$tmp/dh.err")" \
			"tailbus replay: $tmp/double.hlog: line 6: histogram payload: DoubleHistogram payloads are not supported"
}
check "a DoubleHistogram payload is refused with that name, file and line" double_histogram

# --- output-log: a valid log that reads back to the same figures ---
output_log() {
	"$TAILBUS" replay "$V3" "$TAGGED" --start 2 --end 30 --output-log "$tmp/out.hlog" \
		--format json >"$tmp/o1.json" || return 1
	grep -q '^#\[Histogram log format version 1.3\]$' "$tmp/out.hlog" || return 1
	grep -q '^#\[BaseTime: ' "$tmp/out.hlog" || return 1
	"$TAILBUS" replay "$tmp/out.hlog" --format json >"$tmp/o2.json" || return 1
	python3 - "$tmp/o1.json" "$tmp/o2.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda d: {t["tag"]: t for t in d["tags"]}
assert key(a) == key(b), (a, b)
EOF
	# sorted by start time, tags kept
	python3 - "$tmp/out.hlog" <<'EOF'
import sys
rows = [l for l in open(sys.argv[1]) if l[0] not in '#"']
starts = [float(l.split(",")[1 if l.startswith("Tag=") else 0]) for l in rows]
assert starts == sorted(starts), "lines not sorted by start"
assert any(l.startswith("Tag=A,") for l in rows) and any(l.startswith("Tag=a3.134a,") for l in rows)
EOF
}
check "--output-log writes the selection as a log that reads back identically" output_log

# --- bad inputs: one sentence, non-zero exit, good lines still used ---
missing_file() {
	local rc=0
	"$TAILBUS" replay "$tmp/nope.hlog" "$TAGGED" --tag A --format json >"$tmp/mf.json" 2>"$tmp/mf.err" || rc=$?
	expect_eq rc "$rc" 1 &&
		grep -q "cannot read $tmp/nope.hlog: No such file or directory" "$tmp/mf.err" &&
		expect_eq total "$(json_field "$tmp/mf.json" A count)" 16145
}
check "a missing file is named, the others still read, exit 1" missing_file

bad_lines() {
	{
		head -6 "$TAGGED"
		echo "Tag=A,7.1a33,0.999,0.459,HISTFAAAAEJ42pNp"
		sed -n '7,$p' "$TAGGED"
	} >"$tmp/bad.hlog"
	local rc=0
	"$TAILBUS" replay "$tmp/bad.hlog" --tag A --format json >"$tmp/bl.json" 2>"$tmp/bl.err" || rc=$?
	expect_eq rc "$rc" 1 &&
		grep -q "bad.hlog: line 7: start timestamp '7.1a33' is not a number" "$tmp/bl.err" &&
		expect_eq total "$(json_field "$tmp/bl.json" A count)" 16145
}
check "a malformed line is named by number and skipped; the rest is used" bad_lines

unknown_tag() {
	local rc=0
	"$TAILBUS" replay "$TAGGED" --tag nosuch >/dev/null 2>"$tmp/ut.err" || rc=$?
	expect_eq rc "$rc" 1 && grep -q "tag 'nosuch' has no intervals" "$tmp/ut.err"
}
check "an unknown tag is an error" unknown_tag

fixture_errors() {
	local f rc
	for f in "$TB_FIXTURES"/test_tagged_*.txt; do
		rc=0
		"$TAILBUS" replay "$f" >/dev/null 2>"$tmp/fe.err" || rc=$?
		expect_eq "rc $f" "$rc" 1 || return 1
		grep -q "$(basename "$f"): line 1: " "$tmp/fe.err" || { cat "$tmp/fe.err"; return 1; }
	done
}
check "each malformed fixture line is rejected with its line number" fixture_errors

v1_log() {
	"$TAILBUS" replay "$TB_FIXTURES/ycsb.logV1.hlog" --digits 3 --format json >"$tmp/y.json" || return 1
	expect_eq total "$(json_field "$tmp/y.json" "" count)" 300056 &&
		expect_eq p99_9 "$(json_field "$tmp/y.json" "" p99_9)" 1214463
}
check "V1 payloads (ycsb) decode to the reference's figures" v1_log

usage_errors() {
	local rc=0
	"$TAILBUS" replay >/dev/null 2>&1 || rc=$?
	expect_eq "no file" "$rc" 2 || return 1
	rc=0
	"$TAILBUS" replay "$V2" --format xml >/dev/null 2>"$tmp/u.err" || rc=$?
	expect_eq "bad format" "$rc" 2 && grep -q "bad value 'xml' for --format" "$tmp/u.err"
}
check "usage errors exit 2 and name the option" usage_errors

impossible_range() {
	local rc=0
	"$TAILBUS" replay "$V2" --start 50 --end 10 >"$tmp/ir.out" 2>"$tmp/ir.err" || rc=$?
	expect_eq rc "$rc" 2 && grep -q -- "--start 50 s is after --end 10 s" "$tmp/ir.err"
}
check "--start after --end is a usage error" impossible_range

empty_selection() {
	local rc=0
	printf '#[StartTime: 1.000 (seconds since epoch)]\n"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n' \
		>"$tmp/empty.hlog"
	"$TAILBUS" replay "$tmp/empty.hlog" >/dev/null 2>"$tmp/es.err" || rc=$?
	expect_eq "no lines: rc" "$rc" 1 && grep -q "the given files hold no interval lines" "$tmp/es.err" || return 1
	rc=0
	"$TAILBUS" replay "$V2" --start 100000 >/dev/null 2>"$tmp/es2.err" || rc=$?
	expect_eq "none in range: rc" "$rc" 1 && grep -q "no interval of the given files lies between" "$tmp/es2.err"
}
check "a file with no interval lines, or a range that selects none, is an error" empty_selection

replay_escapes() {
	printf '#[StartTime: 1.000 (seconds since epoch)]\n"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n\033]0;owned\007\033[31m,1.0,2.0,AAAA\n' \
		>"$tmp/esc.hlog"
	"$TAILBUS" replay "$tmp/esc.hlog" >/dev/null 2>"$tmp/esc.err" || true
	if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$tmp/esc.err"; then
		echo "  a control byte reached stderr: $(cat -v "$tmp/esc.err")"; return 1
	fi
	grep -qF "'\\x1b]0;owned\\x07\\x1b[31m' is not a number" "$tmp/esc.err" || { cat "$tmp/esc.err"; return 1; }
}
check "control bytes from a log are escaped in replay's error messages" replay_escapes

summary replay_cli
