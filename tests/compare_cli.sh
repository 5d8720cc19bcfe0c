#!/usr/bin/env bash
# compare_cli.sh - `tailbus compare` as a user runs it: a difference is called
# only when the run-to-run spreads do not overlap, in the right direction,
# never from one run a side nor from a thin percentile; JSON for scripts;
# overlaid spectra; one sentence for each bad input.
#
# Needs: TAILBUS (the binary), TB_GEN_RUNS (tests/gen_runs, writes the runs).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?path of the tailbus binary}"
: "${TB_GEN_RUNS:?path of the gen_runs test program}"
use_tmp

# Runs drawn with the same seed differ only by --scale, so every figure of a
# run sits exactly where its scale puts it: A at 0.90, 1.00, 1.10; B1 inside
# that spread (0.95, 1.05, 1.00); B2 twice as slow (1.90, 2.00, 2.10).
run() { # name scale [more gen_runs options]
	local name=$1 scale=$2
	shift 2
	"$TB_GEN_RUNS" "$tmp/$name.hlog" --intervals 10 --samples 10000 --scale "$scale" "$@"
}
run a1 0.90; run a2 1.00; run a3 1.10
run b1 0.95; run b2 1.05; run b3 1.00
run c1 1.90; run c2 2.00; run c3 2.10
A=("$tmp/a1.hlog" "$tmp/a2.hlog" "$tmp/a3.hlog")
B=("$tmp/b1.hlog" "$tmp/b2.hlog" "$tmp/b3.hlog")
C=("$tmp/c1.hlog" "$tmp/c2.hlog" "$tmp/c3.hlog")

# verdicts FILE: "figure=verdict" for each figure of the first tag
verdicts() {
	python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["tags"][0]
print(" ".join("%s=%s" % (f["figure"], f["verdict"]) for f in t["figures"]))' "$1"
}

overlap() {
	"$TAILBUS" compare "${A[@]}" -- "${B[@]}" --format json >"$tmp/o.json" || return 1
	expect_eq verdicts "$(verdicts "$tmp/o.json")" \
		"p50=no_difference p90=no_difference p99=no_difference p99_9=no_difference p99_99=too_few_samples max=no_difference" || return 1
	"$TAILBUS" compare "${A[@]}" -- "${B[@]}" >"$tmp/o.txt" || return 1
	expect_eq "text" "$(grep -Ec '^  (p50|p90|p99|p99\.9|max) .*no difference shown$' "$tmp/o.txt")" 5 &&
		grep -Eq '^  p99\.99 .*too few samples' "$tmp/o.txt"
}
check "overlapping runs: no difference shown (and p99.99 has too few samples)" overlap

separated() {
	"$TAILBUS" compare "${A[@]}" -- "${C[@]}" --format json >"$tmp/s.json" || return 1
	expect_eq verdicts "$(verdicts "$tmp/s.json")" \
		"p50=a_faster p90=a_faster p99=a_faster p99_9=a_faster p99_99=too_few_samples max=a_faster" || return 1
	python3 - "$tmp/s.json" <<'EOF'
import json, sys
for f in json.load(open(sys.argv[1]))["tags"][0]["figures"]:
    assert abs(f["ratio"] - 2.0) < 0.01, f
EOF
	"$TAILBUS" compare "${A[@]}" -- "${C[@]}" >"$tmp/s.txt" || return 1
	grep -Eq '^  p99 +[0-9]+ +[0-9.]+\.\.[0-9.]+ +[0-9]+ +[0-9.]+\.\.[0-9.]+ +2\.00  A faster$' "$tmp/s.txt"
}
check "B twice as slow: 'A faster' with B/A = 2.00" separated

reversed() {
	"$TAILBUS" compare "${C[@]}" -- "${A[@]}" --format json >"$tmp/r.json" || return 1
	expect_eq p50 "$(verdicts "$tmp/r.json" | cut -d' ' -f1)" p50=b_faster &&
		python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["tags"][0]["figures"][0]
assert abs(f["ratio"] - 0.5) < 0.005, f' "$tmp/r.json"
}
check "the other way round: 'B faster'" reversed

one_run() {
	"$TAILBUS" compare "$tmp/a2.hlog" -- "$tmp/c2.hlog" --format json >"$tmp/1.json" || return 1
	expect_eq p50 "$(verdicts "$tmp/1.json" | cut -d' ' -f1)" p50=spread_unknown || return 1
	"$TAILBUS" compare "$tmp/a2.hlog" -- "$tmp/c2.hlog" >"$tmp/1.txt" || return 1
	expect_eq "text" "$(grep -c 'spread cannot be judged' "$tmp/1.txt")" 6 &&
		grep -q 'one run on a side shows no run-to-run noise' "$tmp/1.txt"
}
check "one run a side: the spread cannot be judged, even at 2x" one_run

chance() {
	grep -q 'with 3 and 3 runs, spreads separate by chance 10.0% of the time' "$tmp/s.txt" &&
		python3 -c '
import json, sys
assert abs(json.load(open(sys.argv[1]))["tags"][0]["chance_separated"] - 0.1) < 1e-12' "$tmp/s.json" &&
		python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["tags"][0]["chance_separated"] is None' "$tmp/1.json"
}
check "the chance of separated spreads without a difference is stated (2/C(6,3) = 10%)" chance

json_structure() {
	python3 - "$tmp/s.json" "${A[@]}" -- "${C[@]}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
args = sys.argv[2:]
cut = args.index("--")
assert doc["a"] == args[:cut] and doc["b"] == args[cut + 1:], doc
assert list(doc) == ["a", "b", "tags", "env"]
assert set(doc["env"]) == {"a", "b"}, doc["env"]
t = doc["tags"][0]
assert list(t) == ["tag", "a", "b", "chance_separated", "figures"], list(t)
assert t["tag"] == "" and t["a"]["counts"] == [100000] * 3 and t["b"]["counts"] == [100000] * 3
assert [f["figure"] for f in t["figures"]] == ["p50", "p90", "p99", "p99_9", "p99_99", "max"]
for f in t["figures"]:
    assert list(f) == ["figure", "a", "b", "ratio", "insufficient", "verdict"], list(f)
    for side in (f["a"], f["b"]):
        assert list(side) == ["runs", "median", "min", "max"] and len(side["runs"]) == 3
        assert side["min"] == min(side["runs"]) and side["max"] == max(side["runs"])
        assert side["median"] == sorted(side["runs"])[1]
EOF
}
check "json has the documented structure and consistent medians and spreads" json_structure

too_few() {
	"$TB_GEN_RUNS" "$tmp/t1.hlog" --intervals 2 --samples 500
	"$TB_GEN_RUNS" "$tmp/t2.hlog" --intervals 2 --samples 500 --scale 1.1
	"$TB_GEN_RUNS" "$tmp/t3.hlog" --intervals 2 --samples 500 --scale 3
	"$TB_GEN_RUNS" "$tmp/t4.hlog" --intervals 2 --samples 500 --scale 3.3
	"$TAILBUS" compare "$tmp/t1.hlog" "$tmp/t2.hlog" -- "$tmp/t3.hlog" "$tmp/t4.hlog" --format json \
		>"$tmp/t.json" || return 1
	expect_eq verdicts "$(verdicts "$tmp/t.json")" \
		"p50=a_faster p90=a_faster p99=too_few_samples p99_9=too_few_samples p99_99=too_few_samples max=a_faster"
}
check "1000 samples a run: p99 and beyond are too thin to call" too_few

tags() {
	local g
	for g in x1:1.0 x2:1.1 y1:2.0 y2:2.2; do
		"$TB_GEN_RUNS" "$tmp/${g%%:*}.hlog" --intervals 4 --samples 30000 --scale "${g##*:}" \
			--tag front --tag back
	done
	"$TAILBUS" compare "$tmp/x1.hlog" "$tmp/x2.hlog" -- "$tmp/y1.hlog" "$tmp/y2.hlog" --format json \
		>"$tmp/tags.json" || return 1
	expect_eq tags "$(python3 -c 'import json,sys; print(" ".join(t["tag"] for t in json.load(open(sys.argv[1]))["tags"]))' "$tmp/tags.json")" \
		"front back" || return 1
	"$TAILBUS" compare "$tmp/x1.hlog" "$tmp/x2.hlog" -- --tag back "$tmp/y1.hlog" "$tmp/y2.hlog" \
		>"$tmp/tags.txt" || return 1
	grep -q '^tag back: A 2 runs, B 2 runs$' "$tmp/tags.txt" && ! grep -q '^tag front' "$tmp/tags.txt" &&
		grep -q 'spreads separate by chance 33.3% of the time' "$tmp/tags.txt"
}
check "each tag is compared on its own; --tag selects one (options on either side of --)" tags

plot() {
	"$TAILBUS" compare "${A[@]}" -- "${C[@]}" --plot "$tmp/plots" >"$tmp/p.txt" || return 1
	local f="$tmp/plots/compare-spectrum.svg"
	[[ -s "$f" ]] && grep -qx "plot: $f" "$tmp/p.txt" || return 1
	python3 - "$f" <<'EOF'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
paths = ET.parse(sys.argv[1]).getroot().findall(".//%spath[@class='series']" % ns)
assert len(paths) == 6, len(paths)
labels = [p.find(ns + "title").text for p in paths]
assert [l.split()[0] for l in labels] == ["A1", "A2", "A3", "B1", "B2", "B3"], labels
a = {p.get("stroke") for p in paths[:3]}
b = {p.get("stroke") for p in paths[3:]}
assert len(a) == 3 and len(b) == 3 and not a & b, (a, b)
EOF
}
check "--plot overlays every run's spectrum, A and B in two colour families" plot

errors() {
	local rc=0
	"$TAILBUS" compare "${A[@]}" >/dev/null 2>"$tmp/e1.err" || rc=$?
	expect_eq "no --" "$rc" 2 && grep -q "then '--'" "$tmp/e1.err" || return 1
	rc=0
	"$TAILBUS" compare "${A[@]}" -- >/dev/null 2>&1 || rc=$?
	expect_eq "empty B" "$rc" 2 || return 1
	rc=0
	"$TAILBUS" compare "${A[@]}" -- "${B[@]}" --format xml >/dev/null 2>"$tmp/e2.err" || rc=$?
	expect_eq "bad format" "$rc" 2 && grep -q "bad value 'xml' for --format" "$tmp/e2.err" || return 1
	rc=0
	"$TAILBUS" compare "${A[@]}" -- "${B[@]}" "$tmp/nope.hlog" --format json >"$tmp/e3.json" \
		2>"$tmp/e3.err" || rc=$?
	expect_eq "missing file" "$rc" 1 && grep -q "cannot read $tmp/nope.hlog" "$tmp/e3.err" &&
		python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["b"]) == 3' "$tmp/e3.json" ||
		return 1
	rc=0
	"$TAILBUS" compare "${A[@]}" -- "${B[@]}" --tag nosuch >/dev/null 2>"$tmp/e4.err" || rc=$?
	expect_eq "unknown tag" "$rc" 1 && grep -q "tag 'nosuch' has no intervals in" "$tmp/e4.err"
}
check "usage errors exit 2; a missing file or tag is named and exits 1" errors

# A B a thousand times faster reads B/A 0.001 (two decimals would say 0.00).
tiny_ratio() {
	run d1 0.0009; run d2 0.001; run d3 0.0011
	"$TAILBUS" compare "${A[@]}" -- "$tmp/d1.hlog" "$tmp/d2.hlog" "$tmp/d3.hlog" >"$tmp/d.txt" || return 1
	grep -Eq '^  p50 .* 0\.001  B faster$' "$tmp/d.txt" || { grep '^  p50' "$tmp/d.txt"; return 1; }
}
check "a B a thousand times faster shows B/A 0.001, not 0.00" tiny_ratio

# Runs on stdin and gzip'd read as the plain files.
inputs_as_they_come() {
	"$TAILBUS" compare "${A[@]}" -- "${C[@]}" --format json >"$tmp/plain.json" || return 1
	gzip -c "$tmp/c1.hlog" >"$tmp/c1.hlog.gz"
	gzip -c "$tmp/a1.hlog" | "$TAILBUS" compare - "$tmp/a2.hlog" "$tmp/a3.hlog" -- \
		"$tmp/c1.hlog.gz" "$tmp/c2.hlog" "$tmp/c3.hlog" --format json >"$tmp/in.json" || return 1
	python3 - "$tmp/plain.json" "$tmp/in.json" <<'EOF2'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["tags"] == b["tags"], "figures differ"
assert b["a"][0] == "-" and b["b"][0].endswith("c1.hlog.gz"), (b["a"], b["b"])
EOF2
}
check "a run on stdin (-) and a gzip'd run read as the plain logs" inputs_as_they_come

compare_escapes() {
	printf '#[StartTime: 1.000 (seconds since epoch)]\n"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n\033]0;owned\007\033[31m,1.0,2.0,AAAA\n' \
		>"$tmp/esc.hlog"
	"$TAILBUS" compare "$tmp/esc.hlog" -- "$tmp/esc.hlog" >/dev/null 2>"$tmp/esc.err" || true
	if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$tmp/esc.err"; then
		echo "  a control byte reached stderr: $(cat -v "$tmp/esc.err")"; return 1
	fi
	grep -qF "'\\x1b]0;owned\\x07\\x1b[31m' is not a number" "$tmp/esc.err" || { cat "$tmp/esc.err"; return 1; }
}
check "control bytes from a log are escaped in compare's error messages" compare_escapes

summary compare_cli
