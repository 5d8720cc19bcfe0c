/* test_units.c - option values: every unit of every kind, bare numbers in the
 * option's own unit, fractions, junk, negatives, zero below a minimum, values
 * above a maximum and past int64, formatting that parses back, and the
 * phrases that say why a value was refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/units.h"

static const tb_unit_spec any_ns = {TB_UNIT_DURATION, TB_UNIT_NS, 0, INT64_MAX};
static const tb_unit_spec any_s = {TB_UNIT_DURATION, TB_UNIT_S, 0, INT64_MAX};
static const tb_unit_spec any_size = {TB_UNIT_SIZE, 1, 0, INT64_MAX};
static const tb_unit_spec any_count = {TB_UNIT_COUNT, 1, 0, INT64_MAX};

static int64_t parsed(const char *s, const tb_unit_spec *spec)
{
	int64_t v = -12345;
	assert_int_equal(tb_unit_parse(s, spec, &v), 0);
	return v;
}

static void refused(const char *s, const tb_unit_spec *spec, int err)
{
	int64_t v = -12345;
	int rc = tb_unit_parse(s, spec, &v);
	if (rc != err)
		fail_msg("'%s': got %d, want %d", s, rc, err);
	assert_int_equal(v, -12345); /* untouched */
}

static void every_duration_unit(void **state)
{
	(void)state;
	assert_int_equal(parsed("7ns", &any_s), 7);
	assert_int_equal(parsed("7us", &any_s), 7000);
	assert_int_equal(parsed("7ms", &any_s), 7000000);
	assert_int_equal(parsed("7s", &any_ns), 7000000000LL);
	assert_int_equal(parsed("7m", &any_ns), 420000000000LL);
	assert_int_equal(parsed("7h", &any_ns), 25200000000000LL);
}

static void bare_duration_counts_the_options_unit(void **state)
{
	(void)state;
	const tb_unit_spec us = {TB_UNIT_DURATION, TB_UNIT_US, 0, INT64_MAX};
	const tb_unit_spec ms = {TB_UNIT_DURATION, TB_UNIT_MS, 0, INT64_MAX};
	assert_int_equal(parsed("60", &any_s), 60 * TB_UNIT_S);
	assert_int_equal(parsed("5", &us), 5000);
	assert_int_equal(parsed("250", &ms), 250 * TB_UNIT_MS);
	assert_int_equal(parsed("500", &any_ns), 500);
}

static void duration_fractions_and_exponents(void **state)
{
	(void)state;
	assert_int_equal(parsed("1.5s", &any_ns), 1500000000LL);
	assert_int_equal(parsed("0.1", &any_s), 100000000LL);
	assert_int_equal(parsed(".25ms", &any_ns), 250000);
	assert_int_equal(parsed("5.", &any_s), 5 * TB_UNIT_S);
	assert_int_equal(parsed("1e3us", &any_ns), TB_UNIT_MS);
	assert_int_equal(parsed("2E-3s", &any_ns), 2 * TB_UNIT_MS);
	/* rounded to the nearest ns */
	assert_int_equal(parsed("1.6ns", &any_ns), 2);
	assert_int_equal(parsed("0.4ns", &any_ns), 0);
	/* 1e9 s is 1e18 ns: fits */
	assert_int_equal(parsed("1e9s", &any_ns), 1000000000000000000LL);
}

static void every_size_unit(void **state)
{
	(void)state;
	assert_int_equal(parsed("4096", &any_size), 4096);
	assert_int_equal(parsed("10K", &any_size), 10240);
	assert_int_equal(parsed("10M", &any_size), 10 * 1048576LL);
	assert_int_equal(parsed("3G", &any_size), 3 * 1073741824LL);
	assert_int_equal(parsed("10KiB", &any_size), 10240);
	assert_int_equal(parsed("10MiB", &any_size), 10 * 1048576LL);
	assert_int_equal(parsed("1GiB", &any_size), 1073741824LL);
	assert_int_equal(parsed("1.5K", &any_size), 1536);
	assert_int_equal(parsed("0.5G", &any_size), 512 * 1048576LL);
}

static void counts_are_whole_numbers(void **state)
{
	(void)state;
	assert_int_equal(parsed("0", &any_count), 0);
	assert_int_equal(parsed("42", &any_count), 42);
	assert_int_equal(parsed("9223372036854775807", &any_count), INT64_MAX);
	refused("1.5", &any_count, -EINVAL);
	refused("1e3", &any_count, -EINVAL);
	refused("10K", &any_count, -EINVAL);
	refused("5s", &any_count, -EINVAL);
}

static void junk_is_refused(void **state)
{
	(void)state;
	static const char *const junk[] = {"", "s", "ms", "abc", "1x", "1 s", " 1s", "1s ", "+1s",
					   "1.2.3s", "1sec", "1S", "1Ms", "0x10", "inf", "nan", "1e",
					   "1es", "--1", "-", ".", ".s", "1..s", "1/2"};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		refused(junk[i], &any_ns, -EINVAL);
	/* units of the other kind */
	refused("10M", &any_ns, -EINVAL);
	refused("10ms", &any_size, -EINVAL);
	refused("10k", &any_size, -EINVAL);
	refused("10m", &any_size, -EINVAL);
	refused("10B", &any_size, -EINVAL);
	refused("1h", &any_size, -EINVAL);
	int64_t v;
	assert_int_equal(tb_unit_parse(NULL, &any_ns, &v), -EINVAL);
	assert_int_equal(tb_unit_parse("1", NULL, &v), -EINVAL);
	assert_int_equal(tb_unit_parse("1", &any_ns, NULL), -EINVAL);
	const tb_unit_spec bad_bounds = {TB_UNIT_COUNT, 1, 5, 4};
	assert_int_equal(tb_unit_parse("4", &bad_bounds, &v), -EINVAL);
	const tb_unit_spec no_bare = {TB_UNIT_DURATION, 0, 0, 10};
	assert_int_equal(tb_unit_parse("4ns", &no_bare, &v), -EINVAL);
}

static void negatives_are_below_every_minimum(void **state)
{
	(void)state;
	refused("-1", &any_count, -EDOM);
	refused("-1s", &any_ns, -EDOM);
	refused("-0.5K", &any_size, -EDOM);
	refused("-1e3", &any_s, -EDOM);
	/* minus zero is zero */
	assert_int_equal(parsed("-0", &any_count), 0);
}

static void bounds_are_inclusive(void **state)
{
	(void)state;
	const tb_unit_spec slots = {TB_UNIT_COUNT, 1, 1, 4096};
	refused("0", &slots, -EDOM);
	assert_int_equal(parsed("1", &slots), 1);
	assert_int_equal(parsed("4096", &slots), 4096);
	refused("4097", &slots, -ERANGE);
	const tb_unit_spec interval = {TB_UNIT_DURATION, TB_UNIT_S, TB_UNIT_MS, TB_UNIT_HOUR};
	refused("0", &interval, -EDOM);
	refused("999us", &interval, -EDOM);
	assert_int_equal(parsed("1ms", &interval), TB_UNIT_MS);
	assert_int_equal(parsed("60m", &interval), TB_UNIT_HOUR);
	refused("3601", &interval, -ERANGE);
	refused("1e9s", &interval, -ERANGE);
}

static void overflow_is_refused(void **state)
{
	(void)state;
	refused("9223372036854775808", &any_count, -ERANGE);
	refused("99999999999999999999999", &any_count, -ERANGE);
	refused("9223372036854775808ns", &any_ns, -ERANGE);
	refused("1e10s", &any_ns, -ERANGE);
	refused("3000000h", &any_ns, -ERANGE);
	refused("1e300", &any_s, -ERANGE);
	refused("1e99999", &any_s, -ERANGE);
	refused("8589934592G", &any_size, -ERANGE);
	refused("10000000000000000000000000000000000000000000000000000000000000000000000000000000"
		"0000000000000000000000000000000000000000000000000000000000000000",
		&any_count, -ERANGE);
}

static void format_picks_the_largest_whole_unit(void **state)
{
	(void)state;
	char buf[32];
	static const struct {
		tb_unit_kind kind;
		int64_t v;
		const char *want;
	} cases[] = {
		{TB_UNIT_DURATION, 0, "0"},
		{TB_UNIT_DURATION, 7, "7ns"},
		{TB_UNIT_DURATION, 1500, "1500ns"},
		{TB_UNIT_DURATION, 2000, "2us"},
		{TB_UNIT_DURATION, 1500 * TB_UNIT_MS, "1500ms"},
		{TB_UNIT_DURATION, 90 * TB_UNIT_S, "90s"},
		{TB_UNIT_DURATION, 5400 * TB_UNIT_S, "90m"},
		{TB_UNIT_DURATION, 24 * TB_UNIT_HOUR, "24h"},
		{TB_UNIT_DURATION, INT64_MAX, "9223372036854775807ns"},
		{TB_UNIT_SIZE, 1536, "1536"},
		{TB_UNIT_SIZE, 2048, "2K"},
		{TB_UNIT_SIZE, 10 * TB_UNIT_MIB, "10M"},
		{TB_UNIT_SIZE, 4 * TB_UNIT_GIB, "4G"},
		{TB_UNIT_COUNT, 4096, "4096"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int len = tb_unit_format(buf, sizeof(buf), cases[i].kind, cases[i].v);
		assert_int_equal(len, (int)strlen(cases[i].want));
		assert_string_equal(buf, cases[i].want);
		/* and it reads back */
		tb_unit_spec spec = {cases[i].kind, 1, 0, INT64_MAX};
		assert_int_equal(parsed(buf, &spec), cases[i].v);
	}
	assert_int_equal(tb_unit_format(buf, 3, TB_UNIT_DURATION, 1500), -ENOSPC);
	assert_string_equal(buf, "15");
	assert_int_equal(tb_unit_format(NULL, 8, TB_UNIT_COUNT, 1), -EINVAL);
}

static void why_names_the_bound_or_the_spelling(void **state)
{
	(void)state;
	char buf[160];
	const tb_unit_spec interval = {TB_UNIT_DURATION, TB_UNIT_S, TB_UNIT_MS, TB_UNIT_HOUR};
	assert_true(tb_unit_why(buf, sizeof(buf), -ERANGE, &interval) > 0);
	assert_string_equal(buf, "must be at most 1h");
	assert_true(tb_unit_why(buf, sizeof(buf), -EDOM, &interval) > 0);
	assert_string_equal(buf, "must be at least 1ms");
	assert_true(tb_unit_why(buf, sizeof(buf), -EINVAL, &interval) > 0);
	assert_string_equal(buf, "not a duration (a number and ns, us, ms, s, m or h; a bare "
				 "number counts s)");
	assert_true(tb_unit_why(buf, sizeof(buf), -EDOM, &any_count) > 0);
	assert_string_equal(buf, "must not be negative");
	assert_true(tb_unit_why(buf, sizeof(buf), -EINVAL, &any_count) > 0);
	assert_string_equal(buf, "not a whole number");
	const tb_unit_spec bytes = {TB_UNIT_SIZE, 1, 1, 64 * TB_UNIT_GIB};
	assert_true(tb_unit_why(buf, sizeof(buf), -ERANGE, &bytes) > 0);
	assert_string_equal(buf, "must be at most 64G");
	assert_true(tb_unit_why(buf, sizeof(buf), -EINVAL, &bytes) > 0);
	assert_string_equal(buf, "not a size (bytes, or a number and K, M or G: powers of 1024)");
	assert_int_equal(tb_unit_why(buf, 4, -ERANGE, &bytes), -ENOSPC);
	/* no bound to name when the only limit is int64's */
	assert_true(tb_unit_why(buf, sizeof(buf), -ERANGE, &any_ns) > 0);
	assert_string_equal(buf, "too large");
	/* parse and reason in one call; a reason too long for the buffer
	 * falls back to the error's name, cut to fit */
	int64_t v = 7;
	assert_int_equal(tb_unit_parse_why("2h", &interval, &v, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "must be at most 1h");
	assert_int_equal(v, 7);
	assert_int_equal(tb_unit_parse_why("2s", &interval, &v, buf, sizeof(buf)), 0);
	assert_int_equal(v, 2 * TB_UNIT_S);
	assert_int_equal(tb_unit_parse_why("x", &bytes, &v, buf, 8), -EINVAL);
	assert_string_equal(buf, "Invalid");
}

static void wallclock_reads_utc_iso_and_epoch(void **state)
{
	(void)state;
	int64_t ns = 0;
	assert_int_equal(tb_unit_parse_wallclock("2025-11-30T18:00:00Z", &ns), 0);
	assert_int_equal(ns, 1764525600LL * 1000000000LL);
	assert_int_equal(tb_unit_parse_wallclock("2025-11-30T18:00:02.5Z", &ns), 0);
	assert_int_equal(ns, 1764525602LL * 1000000000LL + 500000000LL);
	assert_int_equal(tb_unit_parse_wallclock("1970-01-01T00:00:00.000000001Z", &ns), 0);
	assert_int_equal(ns, 1);
	assert_int_equal(tb_unit_parse_wallclock("@1764525600", &ns), 0);
	assert_int_equal(ns, 1764525600LL * 1000000000LL);
	assert_int_equal(tb_unit_parse_wallclock("@1.5", &ns), 0);
	assert_int_equal(ns, 1500000000LL);
	static const char *const bad[] = {
		NULL, "", "@", "@-1", "@x", "2025-11-30T18:00:00", "2025-11-30T18:00:00+01:00",
		"2025-11-30 18:00:00Z", "2025-13-30T18:00:00Z", "2025-02-31T18:00:00Z",
		"2025-11-30T24:00:00Z", "2025-11-30T18:00:00.Z", "2025-11-30T18:00:00.1234567890Z",
		"2025-11-30T18:00:00Zjunk", "+2025-11-30T18:00:00Z", "2025-1-30T18:00:00Z",
		"1969-12-31T23:59:59Z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ns = 42;
		assert_int_equal(tb_unit_parse_wallclock(bad[i], &ns), -EINVAL);
		assert_int_equal(ns, 42); /* untouched */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_duration_unit),
		cmocka_unit_test(bare_duration_counts_the_options_unit),
		cmocka_unit_test(duration_fractions_and_exponents),
		cmocka_unit_test(every_size_unit),
		cmocka_unit_test(counts_are_whole_numbers),
		cmocka_unit_test(junk_is_refused),
		cmocka_unit_test(negatives_are_below_every_minimum),
		cmocka_unit_test(bounds_are_inclusive),
		cmocka_unit_test(overflow_is_refused),
		cmocka_unit_test(format_picks_the_largest_whole_unit),
		cmocka_unit_test(why_names_the_bound_or_the_spelling),
		cmocka_unit_test(wallclock_reads_utc_iso_and_epoch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
