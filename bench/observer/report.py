#!/usr/bin/env python3
"""report.py - the figures of bench/observer/run: per collector mode and
recording condition, the median and min..max over runs of the engine's
service time (p50, p99, p99.9), latency from the intended time (p99.9) and
late sends; the verdict on p99.9; a markdown table on stdout, RESULTS.md,
and tab-separated summary lines for bench/run.

    report.py WORK RESULTS.md [SUMMARY]

WORK holds runs.tsv (mode, pair, record, exit status, collector CPU ns,
wall ns per run), <mode>.<pair>.<on|off>.json (tailbus load --json),
replay.<mode>.json (tailbus replay of that mode's bus log) and env.txt
(tailbus env). The run's settings come in OBS_* environment variables.

The rule, as `tailbus compare` states it: a difference is shown only when
the on and off ranges (min..max over runs) do not overlap. Overlapping
ranges mean the difference of the medians is within run-to-run spread.
"""
import json
import math
import os
import statistics
import sys

# Environment fields of `tailbus env` that describe the machine; the kernel
# command line and host name are left out of the record.
ENV_FIELDS = ("machine", "kernel", "cpu_model", "cpus", "hypervisor", "governor", "isolcpus",
              "nohz_full", "clocksource", "thp", "compiler", "version", "commit")
MODE_TEXT = {
    "busy": "busy-poll (pinned)",
    "idle": "idle back-off",
}
SECTION = "observer"


def env(name, default=""):
    return os.environ.get(name, default)


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.2f us" % (ns / 1e3)
    return "%.0f ns" % ns


def spread(values, fmt):
    """'median (min..max)' over runs."""
    if not values:
        return "-"
    return "%s (%s..%s)" % (fmt(statistics.median(values)), fmt(min(values)), fmt(max(values)))


def overlap(a, b):
    return max(min(a), min(b)) <= min(max(a), max(b))


def chance_apart(n, m):
    """How likely the ranges of n and m runs separate when nothing differs:
    2 of the C(n+m, n) equally likely orders put one side wholly above."""
    return 2.0 / math.comb(n + m, n)


def load_runs(work):
    runs = []
    with open(os.path.join(work, "runs.tsv")) as f:
        for line in f:
            mode, pair, rec, rc, cpu_ns, wall_ns = line.rstrip("\n").split("\t")
            run = {"mode": mode, "pair": int(pair), "rec": rec, "rc": int(rc),
                   "collector_cpu": int(cpu_ns) / max(int(wall_ns), 1)}
            try:
                with open(os.path.join(work, "%s.%s.%s.json" % (mode, pair, rec))) as j:
                    d = json.load(j)
                run["d"] = d
                run["r"] = d["runs"][0]
            except (OSError, ValueError, KeyError, IndexError) as e:
                run["error"] = "no report (%s)" % e
            runs.append(run)
    return runs


def check_run(run):
    """Why this run cannot count, or None."""
    if "error" in run:
        return run["error"]
    r, d = run["r"], run["d"]
    if r["unsent"] or r["unserved"]:
        return "%d unsent, %d unserved" % (r["unsent"], r["unserved"])
    if run["rec"] == "on" and (not d["bus_ok"] or d["drops"]):
        return "bus_ok %s, %d events dropped" % (d["bus_ok"], d["drops"])
    if run["rec"] == "off" and d["record"] is not False:
        return "recording was not off"
    return None


def check_log(work, mode, runs):
    """Each on run's events are in the mode's log, none of an off run's: the
    on and off runs of a pair share a metric, so its total is the on run's."""
    problems = []
    try:
        with open(os.path.join(work, "replay.%s.json" % mode)) as f:
            tags = {t["tag"]: t for t in json.load(f)["tags"]}
    except (OSError, ValueError, KeyError) as e:
        return ["the %s log could not be read (%s)" % (mode, e)]
    for run in runs:
        if run["mode"] != mode or run["rec"] != "on" or "r" not in run:
            continue
        r = run["r"]
        main = tags.get(r["metric"])
        warm = tags.get(r["metric"] + ".warmup")
        got = (main["count"] if main else 0, warm["count"] if warm else 0)
        if got != (r["count"], r["warmup_count"]):
            problems.append("%s: the log has %d + %d events, load recorded %d + %d"
                            % (r["metric"], got[0], got[1], r["count"], r["warmup_count"]))
    return problems


def paired(runs, mode, key):
    """The on/off ratio of one figure within each pair (runs next to each
    other in time, so a slow drift of the machine cancels), as a list."""
    by = {}
    for run in runs:
        if run["mode"] == mode and not run.get("excluded"):
            by.setdefault(run["pair"], {})[run["rec"]] = figures([run])[key][0]
    return [p["on"] / p["off"] for p in by.values() if "on" in p and "off" in p and p["off"]]


def figures(runs):
    """Lists over runs of each figure."""
    f = {k: [] for k in ("s50", "s99", "s999", "l999", "late", "busy", "desched", "held",
                         "stolen", "maxgap", "ccpu", "count", "insufficient")}
    for run in runs:
        r = run["r"]
        sv = r["service"]
        f["s50"].append(sv["p50"])
        f["s99"].append(sv["p99"])
        f["s999"].append(sv["p99_9"])
        f["l999"].append(r["p99_9"])
        f["late"].append(r["late"])
        f["busy"].append(r["late_busy"])
        f["desched"].append(r["late_descheduled"])
        f["held"].append(r["late_held"])
        f["stolen"].append(100.0 * r["stolen_ns"] / max(r["run_ns"], 1))
        f["maxgap"].append(r["max_gap_ns"])
        f["ccpu"].append(100.0 * run["collector_cpu"])
        f["count"].append(r["count"])
        f["insufficient"].append("p99_9" in sv["insufficient"])
    return f


def main():
    work, results = sys.argv[1], sys.argv[2]
    summary = sys.argv[3] if len(sys.argv) > 3 else ""
    modes = env("OBS_MODES_USED", "busy idle").split()
    rate, service_ns = int(env("OBS_RATE_USED")), int(env("OBS_SERVICE_NS_USED"))
    quick = env("OBS_QUICK") == "1"
    runs = load_runs(work)
    excluded = []
    for run in runs:
        why = check_run(run)
        if why:
            excluded.append("%s collector, pair %d, recording %s: %s"
                            % (run["mode"], run["pair"], run["rec"], why))
            run["excluded"] = True
    log_problems = []
    for mode in modes:
        log_problems += check_log(work, mode, runs)

    rows, verdicts, lines = [], {}, []
    for mode in modes:
        f = {}
        for rec in ("on", "off"):
            sel = [x for x in runs if x["mode"] == mode and x["rec"] == rec and not x.get("excluded")]
            f[rec] = figures(sel) if sel else None
        if not f["on"] or not f["off"]:
            verdicts[mode] = None
            continue
        for rec in ("on", "off"):
            g = f[rec]
            rows.append("| %s | %s | %d | %s | %s | %s%s | %s | %s | %s / %s | %s | %s |" % (
                MODE_TEXT.get(mode, mode), rec, len(g["s50"]), spread(g["s50"], fmt_ns),
                spread(g["s99"], fmt_ns), spread(g["s999"], fmt_ns),
                " *" if any(g["insufficient"]) else "", spread(g["l999"], fmt_ns),
                spread(g["late"], lambda v: "%d" % v), spread(g["busy"], lambda v: "%d" % v),
                spread(g["desched"], lambda v: "%d" % v), spread(g["stolen"], lambda v: "%.1f%%" % v),
                spread(g["ccpu"], lambda v: "%.0f%%" % v)))
        on, off = f["on"], f["off"]
        v = {}
        for key in ("s50", "s99", "s999", "l999", "late"):
            mon, moff = statistics.median(on[key]), statistics.median(off[key])
            v[key] = {"on": mon, "off": moff, "ratio": mon / moff if moff else None,
                      "overlap": overlap(on[key], off[key]),
                      "on_range": (min(on[key]), max(on[key])),
                      "off_range": (min(off[key]), max(off[key]))}
        v["stolen"] = statistics.median(on["stolen"] + off["stolen"])
        v["desched_share"] = 100.0 * sum(on["desched"] + off["desched"]) / max(
            sum(on["late"] + off["late"]), 1)
        v["sends"] = statistics.median(on["count"] + off["count"])
        v["maxgap"] = max(on["maxgap"] + off["maxgap"])
        v["ccpu_on"], v["ccpu_off"] = statistics.median(on["ccpu"]), statistics.median(off["ccpu"])
        v["n"] = (len(on["s50"]), len(off["s50"]))
        v["pairs"] = paired(runs, mode, "s999")
        verdicts[mode] = v
        for key, label, unit, scale, target in (
                ("s999", "engine service p99.9", "us", 1e3, True),
                ("s99", "engine service p99", "us", 1e3, False),
                ("s50", "engine service p50", "us", 1e3, False),
                ("l999", "latency from intended p99.9", "us", 1e3, False),
                ("late", "late sends per run", "sends", 1, False)):
            x = v[key]
            judged = target and min(v["n"]) >= 2  # never on a single run a side
            verdict = ("met" if x["overlap"] else "missed") if judged else "n/a"
            lines.append("\t".join((
                SECTION, "%s, %s collector, recording on" % (label, mode),
                "%.3f" % (x["on"] / scale), unit, "recording off", "%.3f" % (x["off"] / scale),
                "%.3f" % x["ratio"] if x["ratio"] is not None else "n/a",
                "on/off spreads overlap" if target else "-", verdict)))

    header = ("| collector | recording | runs | service p50 | service p99 | service p99.9 | "
              "latency p99.9 | late sends | busy / descheduled | load lost core | collector CPU |")
    table = [header, "|" + "---|" * 11] + rows
    verdict_lines = []
    overall = True
    for mode in modes:
        v = verdicts.get(mode)
        if v is None:
            verdict_lines.append("- %s collector: NO VERDICT, too few good runs" % mode)
            overall = False
            continue
        x = v["s999"]
        ok = x["overlap"]
        if min(v["n"]) < 2:
            verdict_lines.append("- %s collector: NO VERDICT, a single run on a side" % mode)
            overall = False
            continue
        overall &= ok
        verdict_lines.append(
            "- %s collector: service p99.9 median %s on vs %s off (%+.1f%%); ranges %s..%s on, "
            "%s..%s off: %s" % (
                MODE_TEXT.get(mode, mode), fmt_ns(x["on"]), fmt_ns(x["off"]),
                100.0 * (x["ratio"] - 1) if x["ratio"] else 0.0,
                fmt_ns(x["on_range"][0]), fmt_ns(x["on_range"][1]),
                fmt_ns(x["off_range"][0]), fmt_ns(x["off_range"][1]),
                "MET, they overlap: the difference is within run-to-run spread" if ok
                else "MISSED, they do not overlap: recording changed p99.9 beyond the spread "
                "(ranges of %d and %d runs separate by chance %.1f%% of the time)" % (
                    v["n"][0], v["n"][1], 100.0 * chance_apart(*v["n"]))))
        pr = v["pairs"]
        if pr:
            verdict_lines.append(
                "  within each pair (on/off, neighbours in time): %s; on above off in %d of %d "
                "pairs" % (", ".join("%.2f" % x for x in pr), sum(x > 1 for x in pr), len(pr)))
    verdict_text = ("Verdict: %s" % ("met: no change in the engine's p99.9 beyond run-to-run spread"
                                     if overall else "missed or not judged (see above)"))

    print("\n".join(table))
    print("(median (min..max) over runs; * some run had fewer than 100 samples beyond p99.9)")
    print()
    print("\n".join(verdict_lines))
    for p in log_problems + excluded:
        print("WARNING: " + p)
    print(verdict_text)

    if summary:
        with open(summary, "a") as s:
            for line in lines:
                s.write(line + "\n")

    write_results(results, work, table, verdict_lines, verdict_text, verdicts, modes,
                  excluded, log_problems, rate, service_ns, quick)
    print("written: %s" % results)


def reading(verdicts, modes, rate, service_ns):
    parts = []
    for mode in modes:
        v = verdicts.get(mode)
        if v is None:
            continue
        s999, s99, s50, late = v["s999"], v["s99"], v["s50"], v["late"]
        parts.append(
            "With the collector %s, recording every request (%d events/s) left the engine's "
            "service-time p99.9 median at %s against %s without recording, a %+.1f%% "
            "difference, while the runs of one condition alone ranged over %s..%s (on) and "
            "%s..%s (off)%s. Its p50 moved %+.1f%% and its p99 %+.1f%% (ranges %s). Late "
            "sends: median %d per run on, %d off, of %d measured; %.1f%% of them fell due "
            "while the load's thread was descheduled (the machine's, not the load's). The "
            "collector ran %.0f%% of the time with recording on and %.0f%% with it off%s." % (
                "busy-polling, pinned to a core of its own that others share" if mode == "busy"
                else "sleeping when the bus is quiet", rate,
                fmt_ns(s999["on"]), fmt_ns(s999["off"]), 100.0 * (s999["ratio"] - 1),
                fmt_ns(s999["on_range"][0]), fmt_ns(s999["on_range"][1]),
                fmt_ns(s999["off_range"][0]), fmt_ns(s999["off_range"][1]),
                ": the ranges overlap" if s999["overlap"] else ": the ranges do NOT overlap",
                100.0 * (s50["ratio"] - 1), 100.0 * (s99["ratio"] - 1),
                "overlap" if s50["overlap"] and s99["overlap"] else
                "do not overlap for %s" % " and ".join(
                    k for k, x in (("p50", s50), ("p99", s99)) if not x["overlap"]),
                late["on"], late["off"], v["sends"], v["desched_share"], v["ccpu_on"],
                v["ccpu_off"],
                " (busy-polling, it would run 100%: others took the rest of its core)"
                if mode == "busy" else ""))
        pr = v["pairs"]
        if pr:
            parts[-1] += (" Pair by pair (each on run against the off run beside it in time), "
                          "on/off of p99.9 was %s: on above off in %d of %d pairs, where no "
                          "effect gives about half." % (
                              ", ".join("%.2f" % x for x in pr), sum(x > 1 for x in pr), len(pr)))
    worst = max((verdicts[m]["maxgap"] for m in modes if verdicts.get(m)), default=0)
    stolen = [verdicts[m]["stolen"] for m in modes if verdicts.get(m)]
    parts.append(
        "What limits the claim: the engine serves in %s, but its p99.9 here is set by the "
        "machine. The load's thread lost its core %.1f%% of the time (median over runs) and "
        "once for %s, on a 2-CPU VM shared with other people's builds and benchmarks; the "
        "spread between runs of one condition is that noise. %s On isolated cores "
        "(isolcpus, nohz_full) the spread would shrink and the same script would resolve "
        "a smaller effect. Service time here is done minus start of service: the engine's "
        "work plus its loop's reaction; the cost of tb_span itself (a few ns a request, "
        "bench/bus) falls between requests and shows in latency from intended and in late "
        "sends rather than in it." % (
            fmt_ns(service_ns), statistics.median(stolen) if stolen else 0.0, fmt_ns(worst),
            "So this run shows no effect larger than the spread; it cannot show a smaller one."
            if all(verdicts[m]["s999"]["overlap"] for m in modes if verdicts.get(m))
            else "Where the ranges separated, the pair-by-pair ratios say whether the "
            "direction holds from pair to pair or the separation is that noise."))
    return "\n\n".join(parts)


def env_lines(work):
    out = []
    try:
        with open(os.path.join(work, "env.txt")) as f:
            for line in f:
                key, _, val = line.rstrip("\n").partition(" ")
                if key in ENV_FIELDS:
                    out.append("- %s: %s" % (key, val.strip()))
    except OSError:
        out.append("- (tailbus env failed)")
    return out


def write_results(path, work, table, verdict_lines, verdict_text, verdicts, modes, excluded,
                  log_problems, rate, service_ns, quick):
    dirty = int(env("OBS_DIRTY", "0"))
    doc = [
        "# Observer effect: tailbus recording on vs off",
        "",
        "Written by `bench/observer/run%s` (docs/design.md, Performance targets: an engine at a fixed "
        "rate shows no change in its own p99.9, recording on vs off, beyond run-to-run spread)." % (
            " --quick" if quick else ""),
        "",
        "`tailbus load --rate %d --service-ns %d --duration %s --warmup %s --cpu %s "
        "--record on|off`%s: %s pairs per collector mode, interleaved, the order alternating "
        "(on off, off on, ...); a real `tailbusd --cpu %s` on a fresh bus per mode, running "
        "through the on and off runs alike: `busy` polls without sleeping, `idle` sleeps "
        "`--idle-us %s` when the bus is quiet. Figures are the median (min..max) over runs; "
        "service is the engine's done minus start of service; latency is from the intended "
        "time; late sends are the generator's (busy: its own fault, descheduled: the "
        "machine's); lost core is the share of the run the load's thread was not running." % (
            rate, service_ns, env("OBS_DURATION_USED"), env("OBS_WARMUP_USED"),
            env("OBS_LOAD_CPU"),
            " under `nice -n %s`" % env("OBS_NICE_USED") if env("OBS_NICE_USED") else "",
            env("OBS_PAIRS_USED"), env("OBS_COLLECTOR_CPU"),
            env("OBS_IDLE_US")),
        "",
    ] + table + [
        "",
        "\n".join(verdict_lines),
        "",
        "**%s**" % verdict_text,
        "",
    ]
    if excluded or log_problems:
        doc += ["Warnings:", ""] + ["- " + p for p in log_problems + excluded] + [""]
    else:
        doc += ["Every run finished, every `on` run's events are in the bus log (counts "
                "equal) and no `off` run's are.", ""]
    doc += [
        "## Reading",
        "",
        reading(verdicts, modes, rate, service_ns),
        "",
        "## Machine",
        "",
    ] + env_lines(work) + [
        "- working tree: %s%s" % (env("OBS_COMMIT"),
                                  " plus %d modified tracked files (others at work)" % dirty
                                  if dirty else ""),
        "- load average (1, 5, 15 min): %s at the start, %s at the end" % (
            env("OBS_LOAD_START"), env("OBS_LOAD_END")),
        "- other long-running CPU users: %s at the start; %s at the end" % (
            env("OBS_HOGS_START") or "none", env("OBS_HOGS_END") or "none"),
        "- the measurement took %s s" % env("OBS_ELAPSED_S"),
        "",
        "Reproduce: `bench/observer/run` (about 5 minutes; `--quick` for a smoke test).",
        "",
    ]
    with open(path, "w") as f:
        f.write("\n".join(doc))


if __name__ == "__main__":
    main()
