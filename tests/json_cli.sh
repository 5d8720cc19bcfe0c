#!/usr/bin/env bash
# json_cli.sh - every verb's JSON uses only the keys docs/json.md lists for it:
# top from a bus and from a log, load on a bus (open and closed loop, a sweep,
# a periodic stall), replay with a warm-up, a series and a CO correction,
# compare, clock and env, each run for real on a collector's own log, and ls
# on the collector's segment directory.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}"
HERE="$(dirname "${BASH_SOURCE[0]}")"
DOC="$HERE/../docs/json.md"
use_tmp
unset TAILBUS_DIR TAILBUS_BUS

# documented VERB FILE: every key path in FILE (one JSON document a line) is in
# the ```keys VERB block of docs/json.md; says each one that is not
documented() {
	PYTHONPATH=$HERE python3 - "$DOC" "$1" "$2" <<'EOF'
import json, re, sys
from json_keys import blocks
doc, verb, path = sys.argv[1:]
# '*' stands for one key (env.*) or one array's name (*[].count)
patterns = [re.compile(re.escape(k).replace(r"\*", r"[^.\[\]]+") + "$")
            for k in blocks(doc).get(verb, [])]
if not patterns:
    sys.exit("  no keys block for %s in %s" % (verb, doc))
def walk(v, p, out):
    if isinstance(v, dict):
        for k, x in v.items():
            q = p + "." + k if p else k
            out.add(q)
            walk(x, q, out)
    elif isinstance(v, list):
        for x in v:
            walk(x, p + "[]", out)
paths = set()
for line in open(path):
    if line.strip():
        walk(json.loads(line), "", paths)
if len(paths) < 3:
    sys.exit("  %s: only %s" % (verb, sorted(paths)))
bad = sorted(p for p in paths if not any(r.match(p) for r in patterns))
for p in bad:
    print("  %s: '%s' is not in docs/json.md" % (verb, p))
sys.exit(1 if bad else 0)
EOF
}

BUS=json
start_collector $BUS || exit 1
emit $BUS --threads 1 --count 1500 --metrics 2 --rate 1000 >/dev/null
sleep 2.5 # the emitter's last interval and its grace period

top_bus() {
	"$TAILBUS" top --bus $BUS --dir "$tmp/$BUS/seg" --once --json --window 60 >"$tmp/top.json" &&
		documented top "$tmp/top.json"
}
check "top --json (a bus): documented keys only" top_bus

load_bus() {
	: >"$tmp/load.json"
	"$TAILBUS" load --bus $BUS --dir "$tmp/$BUS/seg" --rate 2000 --duration 0.5 --closed \
		--metric jl --json >>"$tmp/load.json" 2>/dev/null &&
		"$TAILBUS" load --record off --sweep 1000:2000:2 --duration 0.3 --stall-every 0.1 \
			--stall-ns 100000 --service-ns 1000 --json >>"$tmp/load.json" 2>/dev/null &&
		documented load "$tmp/load.json"
}
check "load --json (open, closed, a sweep with stalls): documented keys only" load_bus

stop_collector "$cpid" || true
LOG=$(ls "$tmp/$BUS"/log/*.hlog | head -1)

top_log() {
	"$TAILBUS" top --log "$LOG" --once --json --window 60 >"$tmp/toplog.json" &&
		documented top "$tmp/toplog.json"
}
check "top --log --json: documented keys only" top_log

replay_json() {
	"$TAILBUS" replay "$LOG" --format json >"$tmp/replay.json" &&
		"$TAILBUS" replay "$LOG" --format json --series --warmup 1 >>"$tmp/replay.json" &&
		"$TAILBUS" replay "$LOG" --format json --tag jl.closed --correct-co 1000000 \
			>>"$tmp/replay.json" &&
		documented replay "$tmp/replay.json"
}
check "replay --format json (a warm-up, a series, a CO correction): documented keys only" replay_json

compare_json() {
	"$TAILBUS" compare "$LOG" "$LOG" -- "$LOG" "$LOG" --format json >"$tmp/compare.json" &&
		documented compare "$tmp/compare.json"
}
check "compare --format json: documented keys only" compare_json

ls_json() {
	# the stopped collector's segment, and a file whose creator never finished
	head -c 100 /dev/zero >"$tmp/$BUS/seg/unfinished.tailbus"
	"$TAILBUS" ls --dir "$tmp/$BUS/seg" --json --remove-stale 1h >"$tmp/ls.json" &&
		grep -q '"error":' "$tmp/ls.json" && grep -q '"removed":false' "$tmp/ls.json" &&
		documented ls "$tmp/ls.json"
}
check "ls --json (a bus, a file that is not one yet, --remove-stale): documented keys only" ls_json

clock_env() {
	"$TAILBUS" clock --json --samples 1000 >"$tmp/clock.json" &&
		documented clock "$tmp/clock.json" &&
		"$TAILBUS" env --json >"$tmp/env.json" &&
		documented env "$tmp/env.json"
}
check "clock --json and env --json: documented keys only" clock_env

# every key a table of docs/cli.md names for a verb's JSON (the first
# column's `key`s, under "## tailbus VERB") is one docs/json.md lists for it,
# as a whole path or as a path's last key: the two documents agree
cli_tables() {
	PYTHONPATH=$HERE python3 - "$DOC" "$(dirname "$DOC")/cli.md" <<'EOF'
import re, sys
from json_keys import blocks
doc, cli = sys.argv[1:]
listed = {verb: {k for key in keys for k in (key, re.split(r"[.\]]", key)[-1])}
          for verb, keys in blocks(doc).items()}
verb, table, bad, seen = None, False, [], 0
for line in open(cli):
    m = re.match(r"## tailbus (\w+)", line)
    if line.startswith("## "):
        verb = m.group(1) if m else None
    if line.startswith("| key | type | meaning |"):
        table = True
    elif table and line.startswith("| ") and verb:
        for key in re.findall(r"`([^`]+)`", line.split("|")[1]):
            seen += 1
            if key.lstrip(".") not in listed.get(verb, set()):  # ".b": a sibling
                bad.append("%s: '%s'" % (verb, key))
    elif not line.startswith("|"):
        table = False
if seen < 50:
    sys.exit("  only %d keys found in the tables of %s" % (seen, cli))
for b in bad:
    print("  docs/cli.md names %s, which docs/json.md does not list" % b)
sys.exit(1 if bad else 0)
EOF
}
check "docs/cli.md's JSON tables name only keys docs/json.md lists" cli_tables

summary json_cli
