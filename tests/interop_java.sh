#!/usr/bin/env bash
# interop_java.sh - tailbus against the HdrHistogram Java reference (2.1.11), both ways.
#
# A  tailbus writes, Java reads: tests/gen_log.c writes a log through tb_log_writer
#    (untagged, "alpha", "beta"; 1 ns..10 s; the collector's default layout) and the
#    figures of its in-process merge. Java's HistogramLogReader (tests/java/ReadLog.java)
#    must find the same figures, and HistogramLogProcessor's percentile distribution
#    of each tag must equal `tailbus replay --format hgrm` byte for byte: the .hgrm
#    file Java writes with -o (its two header lines included, its default unit ms)
#    equals tailbus's default output, and with -outputValueUnitRatio 1 (ns, where
#    every nanosecond shows) Java's printed distribution equals `--unit-ratio 1`.
# B  Java writes, tailbus reads: tests/java/WriteLog.java writes a log with
#    HistogramLogWriter (three layouts, zero values, counts > 1) and prints the figures
#    of its in-memory histograms; `tailbus replay --format json` must report them, for
#    both merges (Figures.java), and its hgrm must equal HistogramLogProcessor's.
# G  Logs as they come: the jHiccup fixture with a trailing space and CRLF on every
#    line (Java reads it), gzip'd, and on stdin: each gives Java's .hgrm of the original.
# H  A log of DoubleHistogram intervals (tests/java/WriteDoubleLog.java) is refused,
#    line by line, with "DoubleHistogram payloads are not supported".
# F  The peer fixtures: hgrm of jHiccup (untagged, whole and -start 5 -end 20) and of
#    tagged-Log (tag A) equal HistogramLogProcessor's, and what `--output-log` writes,
#    read back by HistogramLogProcessor, gives the very same distribution.
#
# On stdout HistogramLogProcessor prints one "#[StartTime: ...]" line before the
# distribution, where its .hgrm file has two header lines; the ns comparison drops
# that line and the two of tailbus's (the file comparison already pins them). The
# checks on --output-log keep it (Java against Java) and so also pin the rewritten
# StartTime header.
# HistogramLogProcessor exits 0 even when it dies (NullPointerException on an empty log
# or an unmatched tag), so its output is checked for the footer, never its exit status.
#
# Needs java, javac and the jar: apt-get install default-jdk-headless libhdrhistogram-java.
# Without them the test is skipped (77), or fails when TAILBUS_REQUIRE_JAVA=1.
# Environment (tests/meson.build): TAILBUS, TB_GEN_LOG, TB_FIXTURES; TB_HDR_JAR overrides
# the jar's path.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly SKIP=77
readonly JAR=${TB_HDR_JAR:-/usr/share/java/hdrhistogram.jar}
readonly HLP=org.HdrHistogram.HistogramLogProcessor
# The last line of Java's (and our) text distribution.
readonly FOOTER_RE='^#\[Buckets = '
# Values in the logs' own unit (ns), not HistogramLogProcessor's default of ms.
readonly UNIT_RATIO=1
# Short runs: the client compiler and the serial collector start the JVM faster.
readonly JAVA_FLAGS=(-XX:+IgnoreUnrecognizedVMOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE

# Deterministic formatting and sorting, and a fixed zone for Java's dates.
export LC_ALL=C TZ=UTC

missing=()
for tool in java javac; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[[ -r $JAR ]] || missing+=("$JAR")
if ((${#missing[@]})); then
	if [[ ${TAILBUS_REQUIRE_JAVA:-0} == 1 ]]; then
		echo "interop: FAIL: TAILBUS_REQUIRE_JAVA=1 but ${missing[*]} missing" \
			"(apt-get install default-jdk-headless libhdrhistogram-java)" >&2
		exit 1
	fi
	echo "interop: SKIP: ${missing[*]} missing (apt-get install default-jdk-headless libhdrhistogram-java)"
	exit "$SKIP"
fi
: "${TAILBUS:?path of the tailbus tool}" "${TB_GEN_LOG:?path of tests/gen_log}"
: "${TB_FIXTURES:?fixtures directory}"

use_tmp
# A step every check depends on (gen_log, javac, WriteLog) stops the script: say which.
trap 'echo "interop: FAIL: line $LINENO: $BASH_COMMAND exited with status $?" >&2' ERR

# compare NAME EXPECTED_FILE ACTUAL_FILE: byte-identical, or a diff.
compare() {
	if cmp -s "$2" "$3"; then
		pass "$1 ($(wc -l <"$3") lines identical)"
	else
		fail "$1"
		diff -u --label "expected: $(basename "$2")" --label "actual: $(basename "$3")" \
			"$2" "$3" | head -n 60 || true
	fi
}

# tb OUT ARGS...: tailbus with its stdout in OUT; a non-zero status is a failure.
tb() {
	local out=$1
	shift
	"$TAILBUS" "$@" >"$out" 2>"$out.err" && return 0
	local status=$?
	fail "tailbus$(words "$@") exited with status $status"
	sed 's/^/    /' "$out.err"
	return 1
}

# hlp OUT ARGS...: HistogramLogProcessor's distribution in OUT, checked for its footer.
hlp() {
	local out=$1
	shift
	java "${JAVA_FLAGS[@]}" -cp "$JAR" "$HLP" -outputValueUnitRatio "$UNIT_RATIO" "$@" >"$out" 2>"$out.err" || true
	if grep -q "$FOOTER_RE" "$out"; then
		return 0
	fi
	fail "HistogramLogProcessor $* printed no distribution"
	sed 's/^/    /' "$out.err"
	return 1
}

# Drop the "#[StartTime: ...]" line Java prints first (see the top of this file).
strip_start_time() {
	sed '1{/^#\[StartTime: /d;}' "$1" >"$2"
}

# hlp_file OUT ARGS...: the .hgrm file HistogramLogProcessor -o writes, with Java's
# default unit, copied to OUT and checked for its footer (or, with -csv, its last row).
hlp_file() {
	local out=$1
	shift
	java "${JAVA_FLAGS[@]}" -cp "$JAR" "$HLP" "$@" -o "$out.java-o" >"$out.err" 2>&1 || true
	# the text's footer, or the CSV's last row
	if [[ -r $out.java-o.hgrm ]] && grep -Eq "$FOOTER_RE|,Infinity\$" "$out.java-o.hgrm"; then
		cp "$out.java-o.hgrm" "$out"
		return 0
	fi
	fail "HistogramLogProcessor $* -o wrote no distribution"
	sed 's/^/    /' "$out.err"
	return 1
}

# tailbus's JSON report -> the figure lines of gen_log.c and Figures.java, sorted,
# each prefixed with PREFIX (the merge the figures come from).
json_figures() {
	awk -v prefix="$1" '
	function num(o, k) {
		if (match(o, "\"" k "\":-?[0-9]+"))
			return substr(o, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
		return "MISSING"
	}
	{
		s = $0
		sub(/^\{"tags":\[\{/, "", s)
		sub(/\}\]\}$/, "", s)
		n = split(s, objs, /\},\{/)
		for (i = 1; i <= n; i++) {
			o = objs[i]
			tag = match(o, /"tag":"[^"]*"/) ? substr(o, RSTART + 7, RLENGTH - 8) : "MISSING"
			line = prefix " tag=" tag
			# the JSON says count; the reference figures say total
			split("intervals total min p50 p90 p99 p99_9 p99_99 max", keys, " ")
			for (k = 1; k <= 9; k++)
				line = line " " keys[k] "=" num(o, keys[k] == "total" ? "count" : keys[k])
			print line
		}
	}' "$2" | sort
}

# words ARGS...: the arguments as a shell would need them typed, each after a space.
words() {
	(($#)) && printf ' %q' "$@"
	return 0
}

# hgrm_check NAME LOG TAG|- [ARGS...]: Java's distribution of one tag ("-": untagged)
# against tailbus's, both with the same extra selection ARGS (-start/-end).
hgrm_check() {
	local name=$1 log=$2 tag=$3
	shift 3
	local j=$tmp/$name.java.hgrm t=$tmp/$name.tailbus.hgrm
	local jtag=() ttag=(--tag "")
	[[ $tag == - ]] || { jtag=(-tag "$tag"); ttag=(--tag "$tag"); }
	local jsel=() tsel=()
	while (($#)); do
		jsel+=("-$1" "$2")
		tsel+=("--$1" "$2")
		shift 2
	done
	if hlp_file "$j.file" -i "$log" "${jtag[@]}" "${jsel[@]}" &&
		tb "$t.file" replay "$log" "${ttag[@]}" "${tsel[@]}" --format hgrm; then
		compare "$name: HistogramLogProcessor -i $(basename "$log")$(words "${jtag[@]}" "${jsel[@]}") -o X: X.hgrm == tailbus replay$(words "${ttag[@]}" "${tsel[@]}") --format hgrm" \
			"$j.file" "$t.file"
	fi
	hlp "$j" -i "$log" "${jtag[@]}" "${jsel[@]}" || return 0
	tb "$t" replay "$log" "${ttag[@]}" "${tsel[@]}" --format hgrm --unit-ratio "$UNIT_RATIO" || return 0
	strip_start_time "$j" "$j.body"
	tail -n +3 "$t" >"$t.body"
	compare "$name: HistogramLogProcessor -i $(basename "$log")$(words "${jtag[@]}" "${jsel[@]}") -outputValueUnitRatio 1 == tailbus replay$(words "${ttag[@]}" "${tsel[@]}") --format hgrm --unit-ratio 1" \
		"$j.body" "$t.body"
}

echo "interop: $(java -version 2>&1 | head -n 1); $(basename "$(readlink -f "$JAR")")"

# ---- A: tailbus writes, Java reads ----
glog=$tmp/gen.hlog
"$TB_GEN_LOG" "$glog" "$tmp/gen.expected"
sed 's/^/first /' "$tmp/gen.expected" | sort >"$tmp/gen.first"
sed 's/^/new3 /' "$tmp/gen.expected" | sort >"$tmp/gen.new3"
if tb "$tmp/gen.json" replay "$glog" --format json; then
	json_figures first "$tmp/gen.json" >"$tmp/gen.tailbus"
	compare "A1 figures: gen_log's in-process merge == tailbus replay --format json" \
		"$tmp/gen.first" "$tmp/gen.tailbus"
fi

javac "${JAVA_FLAGS[@]/#/-J}" -d "$tmp/classes" -cp "$JAR" "$HERE"/java/*.java
readonly JCP=$JAR:$tmp/classes

java "${JAVA_FLAGS[@]}" -cp "$JCP" ReadLog "$glog" >"$tmp/gen.read" 2>"$tmp/gen.read.err" || true
sort "$tmp/gen.read" >"$tmp/gen.java"
cat "$tmp/gen.first" "$tmp/gen.new3" | sort >"$tmp/gen.both"
compare "A2 figures: gen_log's in-process merge == Java HistogramLogReader + Histogram.add (both merges)" \
	"$tmp/gen.both" "$tmp/gen.java"
[[ -s $tmp/gen.read ]] || sed 's/^/    /' "$tmp/gen.read.err"

hgrm_check A3-untagged "$glog" -
hgrm_check A4-alpha "$glog" alpha
hgrm_check A5-beta "$glog" beta

# ---- B: Java writes, tailbus reads ----
jlog=$tmp/java.hlog
java "${JAVA_FLAGS[@]}" -cp "$JCP" WriteLog "$jlog" >"$tmp/java.figures"
grep '^first ' "$tmp/java.figures" | sort >"$tmp/java.first"
grep '^new3 ' "$tmp/java.figures" | sort >"$tmp/java.new3"
if tb "$tmp/java.json" replay "$jlog" --format json; then
	json_figures first "$tmp/java.json" >"$tmp/java.tailbus.first"
	compare "B1 figures: WriteLog's merge into a copy of each tag's first histogram == tailbus replay --format json" \
		"$tmp/java.first" "$tmp/java.tailbus.first"
fi
if tb "$tmp/java3.json" replay "$jlog" --format json --digits 3; then
	json_figures new3 "$tmp/java3.json" >"$tmp/java.tailbus.new3"
	compare "B2 figures: WriteLog's merge into new Histogram(3) == tailbus replay --format json --digits 3" \
		"$tmp/java.new3" "$tmp/java.tailbus.new3"
fi
hgrm_check B3-untagged "$jlog" -
hgrm_check B4-B "$jlog" B

# ---- F: the peer fixtures, and --output-log read back by Java ----
jhiccup=$TB_FIXTURES/jHiccup-2.0.7S.logV2.hlog
tagged=$TB_FIXTURES/tagged-Log.logV2.hlog
hgrm_check F1-jhiccup "$jhiccup" -
hgrm_check F2-jhiccup-5-20 "$jhiccup" - start 5 end 20
hgrm_check F2a-jhiccup-negative-start "$jhiccup" - start -3 end 7.25
# F2b: the CSV variant's .hgrm file (-csv), header lines included
if hlp_file "$tmp/F2b.java.csv" -i "$jhiccup" -csv &&
	tb "$tmp/F2b.tailbus.csv" replay "$jhiccup" --tag "" --format hgrm-csv; then
	compare "F2b: HistogramLogProcessor -i $(basename "$jhiccup") -csv -o X: X.hgrm == tailbus replay --format hgrm-csv" \
		"$tmp/F2b.java.csv" "$tmp/F2b.tailbus.csv"
fi

# readback NAME ORIGINAL JAVA_HGRM REWRITTEN TAG|-: the rewritten log, read by Java,
# gives the distribution Java gave for the original (StartTime line included).
readback() {
	local name=$1 orig=$2 want=$3 rewritten=$4 tag=$5 jtag=()
	[[ $tag == - ]] || jtag=(-tag "$tag")
	[[ -s $rewritten ]] || { fail "$name: tailbus wrote no $(basename "$rewritten")"; return 0; }
	hlp "$tmp/$name.java.hgrm" -i "$rewritten" "${jtag[@]}" || return 0
	compare "$name: HistogramLogProcessor$(words "${jtag[@]}") on tailbus --output-log of $(basename "$orig") == on the original" \
		"$want" "$tmp/$name.java.hgrm"
}

# F3: the 5..20 s selection, rewritten, holds exactly the selected intervals.
if tb "$tmp/jh.out" replay "$jhiccup" --start 5 --end 20 --output-log "$tmp/jh-5-20.hlog"; then
	readback F3-jhiccup-output-log "$jhiccup" "$tmp/F2-jhiccup-5-20.java.hgrm" \
		"$tmp/jh-5-20.hlog" -
fi

hgrm_check F4-tagged-A "$tagged" A
# F5, F6: every tag rewritten; Java reads tag A back, tailbus reads every tag back.
if tb "$tmp/tagged.json" replay "$tagged" --format json --output-log "$tmp/tagged-out.hlog"; then
	readback F5-tagged-output-log "$tagged" "$tmp/F4-tagged-A.java.hgrm" \
		"$tmp/tagged-out.hlog" A
	if tb "$tmp/tagged-out.json" replay "$tmp/tagged-out.hlog" --format json; then
		compare "F6 figures: tailbus replay --format json of the rewritten tagged-Log == of the original" \
			"$tmp/tagged.json" "$tmp/tagged-out.json"
	fi
fi

# ---- G: logs as they come ----
sed 's/$/ \r/' "$jhiccup" >"$tmp/jh-crlf.hlog"
gzip -c "$jhiccup" >"$tmp/jh.hlog.gz"
cp "$tmp/jh.hlog.gz" "$tmp/jh-gzip-named-plainly.hlog"
if hlp_file "$tmp/G-crlf.java.hgrm" -i "$tmp/jh-crlf.hlog"; then
	compare "G1: HistogramLogProcessor reads the log with ' \\r' line ends as the original" \
		"$tmp/F1-jhiccup.java.hgrm.file" "$tmp/G-crlf.java.hgrm"
	tb "$tmp/G-crlf.hgrm" replay "$tmp/jh-crlf.hlog" --format hgrm &&
		compare "G2: tailbus replay of the ' \\r' log == Java's .hgrm of it" \
			"$tmp/G-crlf.java.hgrm" "$tmp/G-crlf.hgrm"
fi
for g in jh.hlog.gz jh-gzip-named-plainly.hlog; do
	tb "$tmp/G-$g.hgrm" replay "$tmp/$g" --format hgrm &&
		compare "G3: tailbus replay $g (gzip) == Java's .hgrm of the original" \
			"$tmp/F1-jhiccup.java.hgrm.file" "$tmp/G-$g.hgrm"
done
if "$TAILBUS" replay - --format hgrm <"$tmp/jh.hlog.gz" >"$tmp/G-stdin.hgrm" 2>"$tmp/G-stdin.err"; then
	compare "G4: tailbus replay - <jh.hlog.gz == Java's .hgrm of the original" \
		"$tmp/F1-jhiccup.java.hgrm.file" "$tmp/G-stdin.hgrm"
else
	fail "G4: tailbus replay - <jh.hlog.gz failed"
	sed 's/^/    /' "$tmp/G-stdin.err"
fi

# ---- H: DoubleHistogram payloads, refused by name ----
dlog=$tmp/double.hlog
java "${JAVA_FLAGS[@]}" -cp "$JCP" WriteDoubleLog "$dlog"
rc=0
"$TAILBUS" replay "$dlog" >"$tmp/H.out" 2>"$tmp/H.err" || rc=$?
want="tailbus replay: $dlog: line 5: histogram payload: DoubleHistogram payloads are not supported
tailbus replay: $dlog: line 6: histogram payload: DoubleHistogram payloads are not supported"
if ((rc == 1)) && [[ $(cat "$tmp/H.err") == "$want" ]]; then
	pass "H1: a DoubleHistogram log is refused line by line, by name (exit 1)"
else
	fail "H1: DoubleHistogram log: exit $rc, said:"
	sed 's/^/    /' "$tmp/H.err"
fi

summary interop || exit 1
