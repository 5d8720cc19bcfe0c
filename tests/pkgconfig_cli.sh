#!/usr/bin/env bash
# pkgconfig_cli.sh - an engine builds against the installed producer library
# the way the README says: `pkg-config --cflags --libs tailbus-producer`.
# Installs the build into a temporary DESTDIR, compiles a tiny engine with the
# flags pkg-config gives, runs it on a private bus and checks its counters.
#
# Needs: BUILD_ROOT (the meson build directory).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${BUILD_ROOT:?the meson build directory}"
use_tmp
meson install -C "$BUILD_ROOT" --destdir "$tmp/root" --no-rebuild >/dev/null
pc=$(find "$tmp/root" -name tailbus-producer.pc | head -1)
[[ -n $pc ]] || { echo "FAILED: no tailbus-producer.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$tmp/root
cat >"$tmp/engine.c" <<'C'
#include <stdio.h>
#include <tailbus/producer.h>
int main(void)
{
	tb_producer *p = tb_attach("pkgtest", "engine");
	if (!p || tb_producer_error(p, NULL))
		return 1;
	tb_metric_t m = tb_metric(p, "fill");
	for (int i = 0; i < 1000; i++) {
		uint64_t now = tb_now(p);
		tb_span(p, m, now - 1000, now);
	}
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	printf("%llu %llu\n", (unsigned long long)st.attempted, (unsigned long long)st.written);
	tb_detach(p);
	return 0;
}
C
# shellcheck disable=SC2046
cc -std=gnu11 -Wall -Werror -o "$tmp/engine" "$tmp/engine.c" $(pkg-config --cflags --libs tailbus-producer)
libdir=$(pkg-config --variable=libdir tailbus-producer)
mkdir -p "$tmp/seg"
out=$(TAILBUS_DIR="$tmp/seg" LD_LIBRARY_PATH="$libdir" "$tmp/engine")
if [[ $out == "1000 1000" ]]; then
	pass "an engine built with pkg-config tailbus-producer records (prefix $prefix)"
else
	fail "the engine printed '$out'"
fi
summary pkgconfig
