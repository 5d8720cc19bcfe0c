#!/usr/bin/env bash
# readme_links.sh - the README sends a reader only to what a clone has: every
# relative link or path it names ("[text](path)", "See path") lies inside the
# repository and exists; nothing climbs out of it with "../".
#
# Needs: SOURCE_ROOT (the repository).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${SOURCE_ROOT:?the repository}"
readonly README=$SOURCE_ROOT/README.md

no_parent_paths() {
	local hits
	hits=$(grep -n '\.\./' "$README" || true)
	[[ -z $hits ]] || { echo "  $hits"; return 1; }
}
check "the README names no path outside the repository (no ../)" no_parent_paths

links_exist() {
	local target missing=0
	# markdown links with a relative target (not http:, mailto:, #anchor)
	while read -r target; do
		target=${target%%#*}
		[[ -z $target || $target =~ ^[a-z]+: ]] && continue
		[[ -e $SOURCE_ROOT/$target ]] || { echo "  missing: $target"; missing=1; }
	done < <(grep -o '\]([^)]*)' "$README" | sed 's/^](//; s/)$//')
	return "$missing"
}
check "every relative link of the README exists in the repository" links_exist

summary readme_links
