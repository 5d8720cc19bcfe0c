#!/usr/bin/env bash
# plot_cli.sh - the plots say what the data supports: a percentile curve ends
# at the percentile its sample count resolves (1 - 1/n), the percentiles with
# too few samples beyond them are shaded and named in the legend, the legend
# and subtitle name the tags, counts, files and time range, figures with too
# few samples are drawn hollow, the sweep marks its knee where the report puts
# it; and rsvg-convert renders every plot without an error.
#
# Needs: TAILBUS, TB_GEN_RUNS; rsvg-convert (librsvg2-bin, scripts/install-deps).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TB_GEN_RUNS:?}"
use_tmp

# A tag with 1,887 samples (the issue's) and one with 300,000, in two files.
"$TB_GEN_RUNS" "$tmp/small.hlog" --intervals 1 --samples 1887 --tag small --seed 3
"$TB_GEN_RUNS" "$tmp/big.hlog" --intervals 3 --samples 100000 --tag big

# svg_check FILE PYTHON: run PYTHON with `svg` (the root element), `ns`,
# `texts` (every text element's text) and the helpers below defined
svg_check() {
	python3 - "$1" "$2" <<'EOF'
import math, re, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
svg = ET.parse(sys.argv[1]).getroot()
assert svg.tag == ns + "svg", svg.tag
texts = ["".join(t.itertext()) for t in svg.iter(ns + "text")]

def series():
    """{legend title: [(x, y) pixels]} of every series path"""
    out = {}
    for p in svg.iter(ns + "path"):
        if p.get("class") == "series":
            pts = [tuple(map(float, m)) for m in re.findall(r"[ML](-?[\d.]+) (-?[\d.]+)", p.get("d"))]
            out[p.find(ns + "title").text] = pts
    return out

def x_ticks():
    """{tick label: x pixel} of the x axis"""
    return {t.text: float(t.get("x")) for t in svg.iter(ns + "text") if t.get("class") == "xtick"}

def percentile_px(p):
    """x pixel of percentile p on the percentile axis, from its 0% and 90% ticks"""
    t = x_ticks()
    far = max(t, key=lambda k: k.count("9"))  # 99.9999% sits 6 decades from 0%
    return t["0%"] + (t[far] - t["0%"]) / far.count("9") * -math.log10(1 - p / 100)

def need(cond, msg):
    if not cond:
        sys.exit("  " + msg)

exec(sys.argv[2])
EOF
}

spectrum_ends_with_the_data() {
	"$TAILBUS" replay "$tmp/small.hlog" "$tmp/big.hlog" --plot "$tmp/p1" >/dev/null || return 1
	svg_check "$tmp/p1/spectrum.svg" '
s = series()
need(set(s) == {"tag small (n=1,887)", "tag big (n=300,000)"}, "legend titles %s" % sorted(s))
for name, n in (("tag small (n=1,887)", 1887), ("tag big (n=300,000)", 300000)):
    end = percentile_px(100 * (1 - 1 / n))
    last = s[name][-1][0]
    need(abs(last - end) <= 0.15, "%s ends at x=%.1f, want %.1f (1 - 1/n)" % (name, last, end))
    need(max(x for x, y in s[name]) <= end + 0.15, "%s runs past 1 - 1/n" % name)
for want in ("tag small (n=1,887)", "tag big (n=300,000)"):
    need(want in texts, "no legend row %r" % want)
'
}
check "a spectrum ends at 1 - 1/n of its samples, not at the axis' edge; the legend gives n" \
	spectrum_ends_with_the_data

insufficient_region_is_marked() {
	svg_check "$tmp/p1/spectrum.svg" '
regions = [r for r in svg.iter(ns + "rect") if r.get("class") == "region"]
need(len(regions) == 1, "%d regions" % len(regions))
r = regions[0]
x0, width = float(r.get("x")), float(r.get("width"))
start = percentile_px(100 * (1 - 100 / 1887))
need(abs(x0 - start) <= 0.15, "region starts at %.1f, want %.1f (100 samples beyond of 1,887)" % (x0, start))
right = max(x_ticks().values())
need(abs(x0 + width - right) <= 0.15, "region ends at %.1f, want the edge %.1f" % (x0 + width, right))
need("fewer than 100 samples beyond (n=1,887)" in texts, "no legend row for the region")
'
}
check "the percentiles with fewer than 100 samples beyond are shaded and named in the legend" \
	insufficient_region_is_marked

subtitle_names_files_and_time() {
	svg_check "$tmp/p1/spectrum.svg" '
sub = [t for t in svg.iter(ns + "text") if t.get("class") == "subtitle"]
need(len(sub) == 1, "no subtitle")
need(sub[0].text == "small.hlog, big.hlog, 2025-11-30 18:00:00 to 18:00:03 UTC", sub[0].text)
' && svg_check "$tmp/p1/over-time_small.svg" '
sub = [t.text for t in svg.iter(ns + "text") if t.get("class") == "subtitle"]
need(sub == ["small.hlog, 2025-11-30 18:00:00 to 18:00:01 UTC, 1 interval, 1,887 samples"], "subtitle %s" % sub)
weak = [g for g in svg.iter(ns + "g") if g.get("class") == "weak"]
need(sum(len(g) for g in weak) == 2, "want p99 and p99.9 of 1,887 samples hollow")
need("fewer than 100 samples beyond" in texts, "no legend row for hollow points")
'
}
check "the subtitle names the files (a tag's own over time) and the UTC range; thin figures are hollow" \
	subtitle_names_files_and_time

compare_legend_counts() {
	"$TB_GEN_RUNS" "$tmp/a.hlog" --intervals 2 --samples 1000 --tag t
	"$TB_GEN_RUNS" "$tmp/b.hlog" --intervals 2 --samples 3000 --tag t --scale 1.5
	"$TAILBUS" compare "$tmp/a.hlog" -- "$tmp/b.hlog" --plot "$tmp/p2" >/dev/null || return 1
	svg_check "$tmp/p2/compare-spectrum_t.svg" '
need(set(series()) == {"A1 a.hlog (n=2,000)", "B1 b.hlog (n=6,000)"}, sorted(series()))
need("1 runs of A, 1 of B, 2025-11-30 18:00:00 to 18:00:02 UTC" in texts, "subtitle")
need("fewer than 100 samples beyond (n=2,000)" in texts, "region row")
'
}
check "compare's spectra name each run's file and count, the runs and their time range" \
	compare_legend_counts

sweep_marks_its_knee() {
	# 0.5 ms of service a request: utilisation 0.5 at 1000/s, 2.5 at 5000/s
	"$TAILBUS" load --record off --sweep 1000:5000:3 --service-ns 500000 --duration 0.3 \
		--warmup 0.05 --json --plot "$tmp/p3" >"$tmp/sweep.json" 2>/dev/null || true
	local knee
	knee=$(json_get "$tmp/sweep.json" knee_rate) || return 1
	[[ $knee != None ]] || { echo "  the sweep found no knee"; return 1; }
	svg_check "$tmp/p3/latency-vs-rate.svg" '
knee = '"$knee"'
t = {float(k): x for k, x in x_ticks().items()}
lo, hi = min(t), max(t)
want = t[lo] + (t[hi] - t[lo]) * (knee - lo) / (hi - lo)
markers = [l for l in svg.iter(ns + "line") if l.get("class") == "marker"]
need(len(markers) == 1, "%d markers" % len(markers))
need(abs(float(markers[0].get("x1")) - want) <= 0.15, "knee marker at %s, want %.1f" % (markers[0].get("x1"), want))
need(any(x.startswith("knee %d/s: " % knee) for x in texts), "no knee label for %d/s" % knee)
need(set(series()) == {"p50", "p99", "p99.9", "max"}, sorted(series()))
need(any("samples per rate" in x for x in texts), "subtitle")
'
}
check "the sweep plot marks the knee the report gives, with its rule" sweep_marks_its_knee

renders() {
	command -v rsvg-convert >/dev/null || { echo "  no rsvg-convert (scripts/install-deps)"; return 1; }
	local f
	for f in "$tmp"/p1/*.svg "$tmp"/p2/*.svg "$tmp"/p3/*.svg; do
		rsvg-convert "$f" -o "${f%.svg}.png" 2>"$tmp/rsvg.err" && [[ ! -s $tmp/rsvg.err ]] ||
			{ echo "  $f:"; cat "$tmp/rsvg.err"; return 1; }
		[[ $(head -c 8 "${f%.svg}.png" | od -An -tx1 | tr -d ' ') == 89504e470d0a1a0a ]] ||
			{ echo "  ${f%.svg}.png is not a PNG"; return 1; }
	done
}
check "rsvg-convert renders every plot to PNG without a complaint" renders

summary plot_cli
