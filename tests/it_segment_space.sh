#!/usr/bin/env bash
# it_segment_space.sh - an engine whose segment's pages its file system
# cannot give: the engine must neither die nor hang.
#   1. the segment cut under a guarded engine and the file system then
#      filled: the guard places a private page and the engine goes on;
#   2. a bus file made sparse beyond its file system (capacities that
#      validate): tb_attach gives a handle that records nothing, guarded
#      or not, instead of one whose first store is a SIGBUS.
# Each case on a small tmpfs of its own, in a private mount namespace
# (unshare: root, or unprivileged user namespaces; skipped without).
# Needs: TB_GUARD_FULL, TB_SPARSE_SEGMENT.
set -euo pipefail
: "${TB_GUARD_FULL:?}" "${TB_SPARSE_SEGMENT:?}"
if ! unshare -rm true 2>/dev/null; then
	echo "it_segment_space: skipped: no private mount namespace here (unshare -rm)"
	exit 77
fi
exec unshare -rm bash -c '
	set -uo pipefail
	failed=0
	run() { # NAME SIZE CMD...: the command on a fresh tmpfs of SIZE, its dir last
		local name=$1 size=$2
		shift 2
		local d
		d=$(mktemp -d /tmp/tb-space.XXXXXX)
		mount -t tmpfs -o size="$size" none "$d"
		if "$@" "$d"; then echo "ok: $name"; else echo "FAILED: $name"; failed=$((failed + 1)); fi
		umount "$d"
		rmdir "$d"
	}
	guard_full() { "$TB_GUARD_FULL" "$1"; }
	sparse() { "$TB_SPARSE_SEGMENT" "$1"; }
	sparse_guarded() { "$TB_SPARSE_SEGMENT" "$1" --guard; }
	run "guarded engine, segment cut and its tmpfs full: goes on" 8m guard_full
	run "engine on a sparse segment beyond its tmpfs: no SIGBUS" 16m sparse
	run "guarded engine on the same: no SIGBUS, no hang" 16m sparse_guarded
	echo "it_segment_space: $failed failed"
	exit $((failed > 0))
'
