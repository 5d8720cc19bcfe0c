#!/bin/bash
# run_fuzz.sh - the libFuzzer tests (suite 'fuzz', built with -Dfuzz=true).
#
#   run_fuzz.sh replay FUZZER DIR...
#       Run every file in the DIRs (saved regressions) once through the
#       fuzzer binary; fail on the first crash, sanitizer report or limit hit.
#   run_fuzz.sh fuzz FUZZER CORPUS DICT SECONDS [SEED_DIR...]
#       Fuzz for SECONDS from CORPUS plus any SEED_DIRs. Everything is copied
#       to a temporary directory first, so the run never writes into the
#       source tree (libFuzzer adds every input that finds new coverage to its
#       first corpus directory). Fails on any crash, leak, timeout or
#       out-of-memory; the offending input is kept and its path printed, to be
#       saved under tests/fuzz/regressions/open/<target>/ once understood.
#
# Limits: -timeout is seconds one input may take; -malloc_limit_mb caps any
# single allocation at 512 MB, several times what the largest valid histogram
# needs (fuzz_check.h), so a decoder that allocates from an unchecked length
# is caught even when the allocation would succeed; -rss_limit_mb is
# libFuzzer's default, stated.
set -u
# libFuzzer exits 77 on a crash (its -error_exitcode), which meson reads as
# "skipped": report every failure as exit status 1 instead.
fail() {
	local rc=$?
	echo "run_fuzz: $(basename "$fuzzer") failed (exit $rc)" >&2
	exit 1
}
limits=(-timeout=5 -malloc_limit_mb=512 -rss_limit_mb=2048)
mode=$1 fuzzer=$2
shift 2

case $mode in
replay)
	files=()
	for d in "$@"; do
		[ -d "$d" ] || continue
		for f in "$d"/*; do
			[ -f "$f" ] && files+=("$f")
		done
	done
	if [ ${#files[@]} -eq 0 ]; then
		echo "run_fuzz: no saved inputs to replay"
		exit 0
	fi
	echo "run_fuzz: replaying ${#files[@]} saved inputs"
	"$fuzzer" "${limits[@]}" "${files[@]}" || fail
	;;
fuzz)
	corpus=$1 dict=$2 seconds=$3
	shift 3
	work=$(mktemp -d "${TMPDIR:-/tmp}/tailbus-fuzz.XXXXXX")
	cp -r "$corpus" "$work/corpus"
	for d in "$@"; do
		[ -d "$d" ] && find "$d" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
	done
	mkdir "$work/artifacts"
	"$fuzzer" "$work/corpus" -dict="$dict" -max_total_time="$seconds" "${limits[@]}" \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "run_fuzz: inputs kept in $work/artifacts:" >&2
		ls -l "$work/artifacts" >&2
		(exit $rc) || fail
	fi
	rm -rf "$work"
	;;
*)
	echo "usage: run_fuzz.sh replay FUZZER DIR... | fuzz FUZZER CORPUS DICT SECONDS [SEED_DIR...]" >&2
	exit 2
	;;
esac
