#!/usr/bin/env bash
# public_headers.sh - every public header (include/tailbus/*.h) compiles on
# its own, as an engine or a tool would include it: as C (gcc and clang;
# gnu11, gnu17, and strict c11 with POSIX asked for) and as C++ (g++ and
# clang++; C++11, 14, 17 and 20), each with -Wall -Wextra -Werror. A header
# that needs another must include it; one that C++ cannot parse (as
# Concurrency Kit's ck_ring.h, which seg_abi.h once pulled in) fails here.
#
# Needs: TB_INCLUDE (the include/ directory of the source tree).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TB_INCLUDE:?the include directory}"
use_tmp

c_modes=("-std=gnu11" "-std=gnu17" "-std=c11 -D_POSIX_C_SOURCE=200809L")
cxx_modes=("-std=c++11" "-std=c++14" "-std=c++17" "-std=c++20")
headers=("$TB_INCLUDE"/tailbus/*.h)
[[ ${#headers[@]} -ge 1 && -e ${headers[0]} ]] || { echo "FAILED: no headers in $TB_INCLUDE/tailbus"; exit 1; }

# compile_all COMPILER LANG MODE...: each header, in each mode; prints what fails
compile_all() {
	local compiler=$1 lang=$2 mode h name ok=0
	shift 2
	if ! command -v "$compiler" >/dev/null; then
		echo "  $compiler not found (scripts/install-deps installs it)"
		return 1
	fi
	for mode in "$@"; do
		for h in "${headers[@]}"; do
			name=tailbus/$(basename "$h")
			# shellcheck disable=SC2086
			if ! printf '#include <%s>\n' "$name" |
				"$compiler" -x "$lang" $mode -Wall -Wextra -Werror -I"$TB_INCLUDE" \
					-fsyntax-only - >"$tmp/err" 2>&1; then
				echo "  $name with $compiler $mode:"
				sed 's/^/    /' "$tmp/err" | head -5
				ok=1
			fi
		done
	done
	return $ok
}

check "every public header compiles as C with gcc (${c_modes[*]})" compile_all gcc c "${c_modes[@]}"
check "every public header compiles as C with clang (${c_modes[*]})" compile_all clang c "${c_modes[@]}"
check "every public header compiles as C++ with g++ (${cxx_modes[*]})" compile_all g++ c++ "${cxx_modes[@]}"
check "every public header compiles as C++ with clang++ (${cxx_modes[*]})" compile_all clang++ c++ "${cxx_modes[@]}"

# Nothing public names Concurrency Kit: an engine needs no libck-dev
ck_free() {
	! grep -nE '(^|[^A-Za-z0-9_])ck_[a-z]|<ck_' "${headers[@]}" | grep -v "Concurrency Kit's ck_ring_t"
}
check "no public header includes or uses Concurrency Kit" ck_free

# Strict C without POSIX gets the header's own message, not an implicit
# declaration of clock_gettime
strict_c_says_why() {
	printf '#include <tailbus/producer.h>\n' |
		gcc -x c -std=c11 -Wall -Wextra -Werror -I"$TB_INCLUDE" -fsyntax-only - >"$tmp/err" 2>&1 && return 1
	grep -q 'needs POSIX clocks' "$tmp/err" || { cat "$tmp/err"; return 1; }
}
check "producer.h in strict C without _POSIX_C_SOURCE says what to define" strict_c_says_why
summary public_headers
