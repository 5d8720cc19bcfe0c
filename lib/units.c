/* units.c - option values with units: parse, format, and say why one is refused.
 *
 * A value is a number, then a unit from its kind's table. The number is
 * checked by hand first (digits, one optional '.', an optional exponent: no
 * sign, no space, no "inf", "nan" or hex, all of which strtold would take),
 * then read with strtold. It is scaled by the unit in long double, whose
 * 64-bit mantissa on x86-64 holds every int64 exactly; the product is
 * rounded to a whole ns or byte and checked against the spec's bounds before
 * it is converted, so no value wraps. A leading '-' before a valid number is
 * a value below every minimum (-EDOM), so "-1" reads as negative, not junk.
 */
#include "tailbus/units.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct unit {
	const char *name;
	int64_t scale;
};

/* Largest first: tb_unit_format takes the first that divides a value. */
static const struct unit durations[] = {
	{"h", TB_UNIT_HOUR}, {"m", TB_UNIT_MIN}, {"s", TB_UNIT_S},
	{"ms", TB_UNIT_MS},  {"us", TB_UNIT_US}, {"ns", TB_UNIT_NS},
};
static const struct unit sizes[] = {
	{"G", TB_UNIT_GIB},   {"M", TB_UNIT_MIB},   {"K", TB_UNIT_KIB},
	{"GiB", TB_UNIT_GIB}, {"MiB", TB_UNIT_MIB}, {"KiB", TB_UNIT_KIB},
};
#define NDURATIONS (sizeof(durations) / sizeof(durations[0]))
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
/* 2^63: the first value an int64 cannot hold. */
#define INT64_LIMIT 0x1p63L

/* Length of the number at s: digits with at most one '.', at least one digit,
 * then an optional exponent (e, optional sign, digits). Whole numbers only
 * when `whole`. 0 when there is none. */
static size_t number_span(const char *s, bool whole)
{
	size_t n = 0, digits = 0;
	while (s[n] >= '0' && s[n] <= '9')
		n++, digits++;
	if (whole)
		return n;
	if (s[n] == '.') {
		n++;
		while (s[n] >= '0' && s[n] <= '9')
			n++, digits++;
	}
	if (!digits)
		return 0;
	if (s[n] == 'e' || s[n] == 'E') {
		size_t e = n + 1;
		if (s[e] == '+' || s[e] == '-')
			e++;
		if (s[e] >= '0' && s[e] <= '9') {
			while (s[e] >= '0' && s[e] <= '9')
				e++;
			n = e;
		}
	}
	return n;
}

/* The scale of unit `u` for `spec`'s kind; 0 if the kind has no such unit. */
static int64_t unit_scale(const char *u, const tb_unit_spec *spec)
{
	if (!*u)
		return spec->kind == TB_UNIT_DURATION ? spec->bare : 1;
	const struct unit *t = spec->kind == TB_UNIT_DURATION ? durations : sizes;
	size_t n = spec->kind == TB_UNIT_DURATION ? NDURATIONS : spec->kind == TB_UNIT_SIZE ? NSIZES : 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(u, t[i].name))
			return t[i].scale;
	}
	return 0;
}

int tb_unit_parse(const char *s, const tb_unit_spec *spec, int64_t *out)
{
	if (!s || !spec || !out || spec->min < 0 || spec->min > spec->max ||
	    (spec->kind == TB_UNIT_DURATION && spec->bare <= 0))
		return -EINVAL;
	bool negative = *s == '-';
	const char *num = s + negative;
	size_t len = number_span(num, spec->kind == TB_UNIT_COUNT);
	if (!len)
		return -EINVAL;
	int64_t scale = unit_scale(num + len, spec);
	if (!scale)
		return -EINVAL;
	char text[128];
	if (len >= sizeof(text))
		return -ERANGE; /* more digits than any int64 has: too large or junk */
	memcpy(text, num, len);
	text[len] = '\0';
	long double v = strtold(text, NULL) * (long double)scale;
	if (negative && v != 0)
		return -EDOM;
	v = roundl(v);
	if (v >= INT64_LIMIT || v > (long double)spec->max)
		return -ERANGE;
	if (v < (long double)spec->min)
		return -EDOM;
	*out = (int64_t)v;
	return 0;
}

int tb_unit_format(char *buf, size_t cap, tb_unit_kind kind, int64_t v)
{
	if (!buf || !cap)
		return -EINVAL;
	const struct unit *t = kind == TB_UNIT_DURATION ? durations : sizes;
	/* only the short spellings: the first three of the size table */
	size_t n = kind == TB_UNIT_DURATION ? NDURATIONS : kind == TB_UNIT_SIZE ? 3 : 0;
	const char *name = "";
	int64_t scale = 1;
	for (size_t i = 0; i < n && v != 0; i++) {
		if (v % t[i].scale == 0) {
			name = t[i].name;
			scale = t[i].scale;
			break;
		}
	}
	int len = snprintf(buf, cap, "%lld%s", (long long)(v / scale), name);
	return (size_t)len < cap ? len : -ENOSPC;
}

/* What a bare number counts, for the -EINVAL phrase of a duration. */
static const char *bare_name(int64_t bare)
{
	for (size_t i = 0; i < NDURATIONS; i++) {
		if (durations[i].scale == bare)
			return durations[i].name;
	}
	return NULL;
}

int tb_unit_why(char *buf, size_t cap, int err, const tb_unit_spec *spec)
{
	if (!buf || !cap || !spec)
		return -EINVAL;
	char bound[32];
	int len;
	switch (err) {
	case -EDOM:
		if (spec->min == 0) {
			len = snprintf(buf, cap, "must not be negative");
			break;
		}
		tb_unit_format(bound, sizeof(bound), spec->kind, spec->min);
		len = snprintf(buf, cap, "must be at least %s", bound);
		break;
	case -ERANGE:
		if (spec->max == INT64_MAX) {
			len = snprintf(buf, cap, "too large");
			break;
		}
		tb_unit_format(bound, sizeof(bound), spec->kind, spec->max);
		len = snprintf(buf, cap, "must be at most %s", bound);
		break;
	default:
		if (spec->kind == TB_UNIT_COUNT) {
			len = snprintf(buf, cap, "not a whole number");
		} else if (spec->kind == TB_UNIT_SIZE) {
			len = snprintf(buf, cap, "not a size (bytes, or a number and K, M or G: "
						 "powers of 1024)");
		} else {
			const char *bare = bare_name(spec->bare);
			len = snprintf(buf, cap, "not a duration (a number and ns, us, ms, s, m or h%s%s)",
				       bare ? "; a bare number counts " : "", bare ? bare : "");
		}
		break;
	}
	return len >= 0 && (size_t)len < cap ? len : -ENOSPC;
}

int tb_unit_parse_why(const char *s, const tb_unit_spec *spec, int64_t *out, char *why, size_t cap)
{
	int rc = tb_unit_parse(s, spec, out);
	if (rc < 0 && why && cap && tb_unit_why(why, cap, rc, spec) < 0)
		snprintf(why, cap, "%s", strerror(-rc));
	return rc;
}

/* Wall-clock times. The fields are read with sscanf and checked by range,
 * then the parse is written back with the same layout and compared, so no
 * trailing junk or odd spelling (a sign, a space) gets through. */
#define WALLCLOCK_MAX_YEAR 9999
#define WALLCLOCK_MIN_YEAR 1970

static int fraction_ns(const char *s, const char *end, int64_t *ns)
{
	/* "" or "." followed by 1..9 digits */
	*ns = 0;
	if (s == end)
		return 0;
	if (*s != '.' || end - s < 2 || end - s > 10)
		return -EINVAL;
	int64_t scale = 100000000;
	for (s++; s < end; s++, scale /= 10) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		*ns += (*s - '0') * scale;
	}
	return 0;
}

static int parse_iso(const char *s, int64_t *epoch_ns)
{
	int y, mo, d, h, mi, sec, n = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
		return -EINVAL;
	char canon[32];
	snprintf(canon, sizeof(canon), "%04d-%02d-%02dT%02d:%02d:%02d", y, mo, d, h, mi, sec);
	if (strncmp(canon, s, 19) || y < WALLCLOCK_MIN_YEAR || y > WALLCLOCK_MAX_YEAR || mo < 1 ||
	    mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	const char *z = strchr(s + 19, 'Z');
	int64_t frac;
	if (!z || z[1] || fraction_ns(s + 19, z, &frac) < 0)
		return -EINVAL;
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			.tm_hour = h, .tm_min = mi, .tm_sec = sec};
	time_t t = timegm(&tm);
	if (tm.tm_mday != d) /* 31 February: timegm moved it */
		return -EINVAL;
	*epoch_ns = (int64_t)t * 1000000000 + frac;
	return 0;
}

int tb_unit_parse_wallclock(const char *s, int64_t *epoch_ns)
{
	if (!s)
		return -EINVAL;
	if (*s != '@')
		return parse_iso(s, epoch_ns);
	static const tb_unit_spec seconds = {TB_UNIT_DURATION, TB_UNIT_S, 0, INT64_MAX};
	return tb_unit_parse(s + 1, &seconds, epoch_ns) < 0 ? -EINVAL : 0;
}
