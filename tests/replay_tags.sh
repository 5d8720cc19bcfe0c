#!/usr/bin/env bash
# replay_tags.sh - what a log's tags cost `tailbus replay`, and how text
# taken from a log reaches the terminal:
#   - a log of 100,000 small tags replays within a memory bound (a tag's
#     histogram takes what its values need, not the range its intervals
#     declare), and past --max-tags (default 10000) replay refuses it in
#     one sentence that names the option raising the limit;
#   - a tag or an env value holding an ESC byte prints as \x1b in every
#     text format of replay and compare (JSON as \u001b), never raw.
#
# Needs: TAILBUS (the binary), TB_GEN_LOG (tests/gen_log, writes the logs).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?path of the tailbus binary}"
: "${TB_GEN_LOG:?path of the gen_log test program}"
use_tmp

# 100,000 tags of one interval each: 10 values below 100 ns in a histogram
# declaring 1 ns .. 1 h at 2 digits (36 KB of counts if sized to that range).
TAGS=100000
"$TB_GEN_LOG" --tags "$TAGS" "$tmp/tags.hlog"
# A bound on the address space: the tags need about 300 MB. A sanitizer's
# runtime reserves terabytes of address space, so there it is left off.
MEM_KB=1500000
sanitized() { grep -q -a __asan_init "$TAILBUS"; }

many_tags_fit() {
	local rc=0
	(
		if ! sanitized; then ulimit -v "$MEM_KB"; fi
		"$TAILBUS" replay "$tmp/tags.hlog" --max-tags "$TAGS" --format csv >"$tmp/tags.csv"
	) 2>"$tmp/tags.err" || rc=$?
	expect_eq status "$rc" 0 || { cat "$tmp/tags.err"; return 1; }
	expect_eq rows "$(wc -l <"$tmp/tags.csv")" $((TAGS + 1)) || return 1
	# tag t0000042 holds 43..52, one sample each
	grep -q '^t0000042,1,10,43,' "$tmp/tags.csv" &&
		grep -q '^t0099999,1,10,' "$tmp/tags.csv"
}
check "replay of $TAGS tags fits in $((MEM_KB / 1000)) MB of address space" many_tags_fit

too_many_tags() {
	local rc=0
	"$TAILBUS" replay "$tmp/tags.hlog" --format csv >"$tmp/limit.out" 2>"$tmp/limit.err" || rc=$?
	expect_eq status "$rc" 1 || return 1
	expect_eq stdout "$(wc -c <"$tmp/limit.out")" 0 || return 1
	if ! grep -q "line 10006: tag 't0010000' is one more than the 10000 tags replay holds" \
		"$tmp/limit.err" || ! grep -q -- '--max-tags N raises the limit' "$tmp/limit.err"; then
		cat "$tmp/limit.err"
		return 1
	fi
	rc=0
	"$TAILBUS" replay "$tmp/tags.hlog" --max-tags 0 >/dev/null 2>&1 || rc=$?
	expect_eq "--max-tags 0" "$rc" 2
}
check "replay refuses more tags than --max-tags, saying how to raise it" too_many_tags

# --- text from the log ---
ESC=$'\033'
BEL=$'\007'
"$TB_GEN_LOG" "$tmp/plain.hlog"
{
	head -4 "$tmp/plain.hlog"
	printf '#[env hostname=h%s]0;title%sx]\n#[env cpus=4]\n' "$ESC" "$BEL"
	grep -v '^#' "$tmp/plain.hlog" | sed "s/^Tag=alpha,/Tag=a${ESC}[31mred,/"
} >"$tmp/esc.hlog"

# no_raw FILE: the output holds no ESC or BEL byte
no_raw() {
	if grep -q "[$ESC$BEL]" "$1"; then
		echo "  $1 holds a raw control byte:"
		cat -v "$1" | grep -F '^[' | head -3
		return 1
	fi
}

escaped_everywhere() {
	local fmt
	for fmt in text csv hgrm hgrm-csv prom-native; do
		"$TAILBUS" replay "$tmp/esc.hlog" --format "$fmt" >"$tmp/esc.$fmt" 2>&1 || return 1
		no_raw "$tmp/esc.$fmt" || return 1
		grep -qF 'a\x1b[31mred' "$tmp/esc.$fmt" || { echo "  $fmt: tag not shown escaped"; return 1; }
	done
	grep -qF 'hostname=h\x1b]0;title\x07x cpus=4' "$tmp/esc.text" || return 1
	"$TAILBUS" replay "$tmp/esc.hlog" --warmup 1 --format csv >"$tmp/esc.warm" 2>&1 || return 1
	no_raw "$tmp/esc.warm" || return 1
	"$TAILBUS" replay "$tmp/esc.hlog" --format json >"$tmp/esc.json" || return 1
	no_raw "$tmp/esc.json" && grep -qF 'a\u001b[31mred' "$tmp/esc.json" &&
		grep -qF '"hostname":"h\u001b]0;title\u0007x"' "$tmp/esc.json" || return 1
	"$TAILBUS" compare "$tmp/esc.hlog" -- "$tmp/esc.hlog" >"$tmp/esc.cmp" 2>&1 || return 1
	no_raw "$tmp/esc.cmp" && grep -qF 'tag a\x1b[31mred:' "$tmp/esc.cmp" &&
		grep -qF 'A measured on: hostname=h\x1b]0;title\x07x cpus=4' "$tmp/esc.cmp"
}
check "a tag or env value with ESC prints escaped in every replay and compare format" \
	escaped_everywhere

summary replay_tags
