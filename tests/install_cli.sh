#!/usr/bin/env bash
# install_cli.sh - day one for a user: `meson install` into a prefix of its
# own, then everything from there and nothing from the build tree:
#   - the installed tailbus and tailbusd run (they find the installed
#     libtailbus-producer through their rpath, with no LD_LIBRARY_PATH);
#   - the installed C and C++ example sources build with
#     `pkg-config --cflags --libs tailbus-producer`, record into a bus that
#     the installed tailbusd serves, and the installed tailbus reads back
#     every event from its log; a C++ program built with `pkg-config tailbus`
#     (the analysis library) counts the same;
#   - the man pages render with man -l without a warning, tailbus(1) with a
#     section for every verb `tailbus --help` lists;
#   - tailbusd@.service names the installed tailbusd and passes
#     systemd-analyze verify.
# The install goes to a temporary DESTDIR; since the programs' rpath is
# relative to their own directory, DESTDIR/PREFIX is a prefix like any other.
#
# Needs: BUILD_ROOT (the meson build directory).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${BUILD_ROOT:?the meson build directory}"
use_tmp
unset LD_LIBRARY_PATH

meson install -C "$BUILD_ROOT" --destdir "$tmp/root" --no-rebuild >"$tmp/install.out" 2>&1 ||
	{ cat "$tmp/install.out"; echo "FAILED: meson install"; exit 1; }
pc=$(find "$tmp/root" -name tailbus-producer.pc | head -1)
[[ -n $pc ]] || { echo "FAILED: no tailbus-producer.pc installed"; exit 1; }
pre=$tmp/root$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH=$(dirname "$pc")
pkgc() { pkg-config --define-variable=prefix="$pre" "$@"; }
bindir=$pre/bin
sbindir=$pre/sbin
libdir=$(pkgc --variable=libdir tailbus-producer)

# the installed programs, and the library each resolves
installed_programs_run() {
	"$bindir/tailbus" --help >/dev/null || { echo "  $bindir/tailbus --help exited $?"; return 1; }
	"$sbindir/tailbusd" --help >/dev/null || { echo "  $sbindir/tailbusd --help exited $?"; return 1; }
	local lib
	lib=$(ldd "$bindir/tailbus" | awk '$1 ~ /^libtailbus-producer/ { print $3 }')
	[[ $lib == "$tmp/root/"* ]] || { echo "  tailbus resolves libtailbus-producer to '$lib'"; return 1; }
}
check "installed tailbus and tailbusd run, using the installed library" installed_programs_run

headers_installed() {
	local h
	for h in producer.h seg_abi.h segment.h hist.h codec.h log.h live.h report.h summary.h analysis.h env.h; do
		[[ -f $pre/include/tailbus/$h ]] || { echo "  $h not installed"; return 1; }
	done
}
check "every public header is installed" headers_installed

# The examples, as installed, built as a user would
examples=$pre/share/doc/tailbus/examples
build_examples() {
	# shellcheck disable=SC2046
	cc -std=gnu11 -Wall -Wextra -Werror -o "$tmp/c_producer" "$examples/c_producer.c" \
		$(pkgc --cflags --libs tailbus-producer) -Wl,-rpath,"$libdir" || return 1
	# shellcheck disable=SC2046
	c++ -std=c++11 -Wall -Wextra -Werror -o "$tmp/cpp_producer" "$examples/cpp_producer.cpp" \
		$(pkgc --cflags --libs tailbus-producer) -Wl,-rpath,"$libdir" || return 1
	# the analysis library, from C++: the total count of one tag in a log
	cat >"$tmp/count_tag.cpp" <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <tailbus/hist.h>
#include <tailbus/log.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	char *text = nullptr;
	size_t len = 0;
	if (tb_read_file(argv[1], &text, &len) < 0)
		return 1;
	tb_log_reader r;
	tb_log_reader_init(&r, text, len);
	tb_log_entry e;
	std::memset(&e, 0, sizeof(e));
	long long total = 0;
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		if (rc < 0)
			return 1;
		if (std::strcmp(e.tag, argv[2]) == 0)
			total += tb_hist_total(&e.hist);
	}
	tb_log_entry_free(&e);
	std::free(text);
	std::printf("%lld\n", total);
	return 0;
}
CPP
	# shellcheck disable=SC2046
	c++ -std=c++17 -Wall -Wextra -Werror -o "$tmp/count_tag" "$tmp/count_tag.cpp" \
		$(pkgc --cflags --libs tailbus) || return 1
}
check "the installed C and C++ examples build with pkg-config tailbus-producer; a C++ reader with pkg-config tailbus" build_examples

# The examples against the installed tailbusd; the installed tailbus reads the log
TAILBUSD=$sbindir/tailbusd
TAILBUS=$bindir/tailbus
record_and_read() {
	local bus=inst out total
	start_collector $bus || return 1
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$tmp/c_producer" $bus 20000) || { echo "  c_producer: $out"; return 1; }
	expect_eq "c_producer counters" "$out" "20000 20000 0 0" || return 1
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$tmp/cpp_producer" $bus 30000) || { echo "  cpp_producer: $out"; return 1; }
	expect_eq "cpp_producer counters" "$out" "30000 30000 0 0" || return 1
	sleep 0.3
	stop_collector "$cpid" || return 1
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/replay.json" || return 1
	expect_eq "replay c_fill total" "$(json_field "$tmp/replay.json" c_fill count)" 20000 || return 1
	expect_eq "replay cpp_fill total" "$(json_field "$tmp/replay.json" cpp_fill count)" 30000 || return 1
	total=0
	for log in "$tmp/$bus"/log/*.hlog; do
		total=$((total + $("$tmp/count_tag" "$log" cpp_fill)))
	done
	expect_eq "count_tag cpp_fill" "$total" 30000
}
check "examples record into the installed tailbusd; installed tailbus replay reads every event" record_and_read

# man pages: installed where man looks, and rendered without a warning
man_pages() {
	local page rc=0
	for page in man1/tailbus.1 man8/tailbusd.8 man3/tailbus-producer.3; do
		[[ -f $pre/share/man/$page ]] || { echo "  $page not installed"; rc=1; continue; }
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -l "$pre/share/man/$page" >"$tmp/man.out" 2>"$tmp/man.err" ||
			{ echo "  man -l $page failed"; rc=1; }
		[[ ! -s $tmp/man.err ]] || { echo "  man -l $page warns:"; cat "$tmp/man.err"; rc=1; }
		grep -q '^NAME' "$tmp/man.out" || { echo "  $page renders no NAME section"; rc=1; }
	done
	return $rc
}
check "man pages tailbus(1), tailbusd(8), tailbus-producer(3) render without warnings" man_pages

every_verb_documented() {
	local verbs verb rc=0
	verbs=$("$TAILBUS" --help | awk '/^verbs:/ { on = 1; next } on && NF { print $1 } on && !NF && seen { exit } NF { seen = 1 }')
	[[ -n $verbs ]] || { echo "  no verbs in tailbus --help"; return 1; }
	LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$pre/share/man/man1/tailbus.1" 2>/dev/null >"$tmp/tailbus.txt"
	for verb in $verbs; do
		grep -q "^   $verb\$" "$tmp/tailbus.txt" || { echo "  tailbus(1) has no section for '$verb'"; rc=1; }
	done
	return $rc
}
check "tailbus(1) has a section for every verb of tailbus --help" every_verb_documented

systemd_unit() {
	local unit=$pre/lib/systemd/system/tailbusd@.service
	[[ -f $unit ]] || { echo "  $unit not installed"; return 1; }
	local prefix=${pre#"$tmp/root"}
	grep -q "^ExecStart=$prefix/sbin/tailbusd --foreground --bus %i " "$unit" ||
		{ echo "  ExecStart does not run $prefix/sbin/tailbusd:"; grep ExecStart "$unit"; return 1; }
	if ! command -v systemd-analyze >/dev/null; then
		echo "  (systemd-analyze not installed: not verified)"
		return 0
	fi
	# verified as an instance, with ExecStart pointing at where it is installed here
	mkdir -p "$tmp/unit"
	sed "s|^ExecStart=$prefix/|ExecStart=$pre/|" "$unit" >"$tmp/unit/tailbusd@orders.service"
	(cd "$tmp/unit" && systemd-analyze verify --man=no ./tailbusd@orders.service) >"$tmp/verify.out" 2>&1 ||
		{ cat "$tmp/verify.out"; return 1; }
	[[ ! -s $tmp/verify.out ]] || { cat "$tmp/verify.out"; return 1; }
}
check "tailbusd@.service runs the installed tailbusd and passes systemd-analyze verify" systemd_unit
summary install
