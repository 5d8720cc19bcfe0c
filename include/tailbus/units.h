/* tailbus/units.h - the values people type on a command line: durations,
 * sizes and counts, each with its units, its range and one reason when refused.
 *
 * Every tool and tailbusd read their durations, sizes and counts through
 * tb_unit_parse, so that one spelling means the same everywhere:
 *   - a duration is a number and a unit: ns, us, ms, s, m (minutes) or h;
 *     a bare number counts the option's own unit (spec->bare: --rotate-seconds
 *     60 is 60 s, --idle-us 5 is 5 us), so old command lines keep working;
 *   - a size is a number of bytes, or a number and K, M or G (also spelled
 *     KiB, MiB, GiB): powers of 1024, as page and ring sizes are;
 *   - a count is a whole number, no unit.
 * Durations and sizes may have a fraction and an exponent ("1.5s", "1e3us");
 * the result is rounded to the nearest ns or byte. Nothing else is accepted:
 * no '+', no space, no hex, no "inf"; a leading '-' reads as a negative
 * value, so that "-1" is refused as below the minimum, not as junk.
 *
 * Errors (negative errno, as the rest of the library):
 *   -EINVAL  not a number, or a unit this kind does not know (or NULL);
 *   -EDOM    below spec->min (a negative value included);
 *   -ERANGE  above spec->max (an overflow of int64 included).
 * tb_unit_why turns one into a phrase for the option's error sentence.
 * Nothing here prints, allocates or keeps state.
 */
#ifndef TAILBUS_UNITS_H
#define TAILBUS_UNITS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The units, in ns and bytes. */
#define TB_UNIT_NS 1LL
#define TB_UNIT_US 1000LL
#define TB_UNIT_MS (1000 * TB_UNIT_US)
#define TB_UNIT_S (1000 * TB_UNIT_MS)
#define TB_UNIT_MIN (60 * TB_UNIT_S)
#define TB_UNIT_HOUR (60 * TB_UNIT_MIN)
#define TB_UNIT_KIB 1024LL
#define TB_UNIT_MIB (1024 * TB_UNIT_KIB)
#define TB_UNIT_GIB (1024 * TB_UNIT_MIB)

typedef enum tb_unit_kind {
	TB_UNIT_COUNT,    /* a whole number */
	TB_UNIT_SIZE,     /* bytes, or K, M, G */
	TB_UNIT_DURATION, /* nanoseconds, from ns, us, ms, s, m, h */
} tb_unit_kind;

/* What an option takes. `bare` is the number of ns a bare number counts
 * (durations only: 1 for an option in ns, TB_UNIT_S for one in seconds);
 * min..max bound the result, in ns, bytes or units, 0 <= min <= max. */
typedef struct tb_unit_spec {
	tb_unit_kind kind;
	int64_t bare;
	int64_t min, max;
} tb_unit_spec;

/* Parse `s` as `spec` says into *out (untouched on error). */
int tb_unit_parse(const char *s, const tb_unit_spec *spec, int64_t *out);

/* `v` in the largest unit that shows it as a whole number (5400 s is "90m",
 * 1500 ms "1500ms", 2048 bytes "2K", 1536 bytes "1536"): durations in ns,
 * us, ms, s, m or h, sizes in bytes, K, M or G, counts as digits; what it
 * writes parses back to `v` (v >= 0). Returns the length, or -ENOSPC when cap
 * is too small (buf then holds a cut, NUL-terminated string), or -EINVAL for
 * a NULL buffer. */
int tb_unit_format(char *buf, size_t cap, tb_unit_kind kind, int64_t v);

/* Why tb_unit_parse refused a value with `err` under `spec`, as a phrase
 * ("must be at most 1h"; "too large" when max is INT64_MAX); same returns as
 * tb_unit_format. */
int tb_unit_why(char *buf, size_t cap, int err, const tb_unit_spec *spec);

/* tb_unit_parse, and when it refuses, its reason in why[cap] (a phrase as
 * tb_unit_why's, or the error's name): what every option parser prints. */
int tb_unit_parse_why(const char *s, const tb_unit_spec *spec, int64_t *out, char *why, size_t cap);

/* A wall-clock time in UTC, as ISO 8601 "YYYY-MM-DDTHH:MM:SS[.frac]Z" (the
 * Z required: no local time zones) or "@SECONDS[.frac]" since the epoch, into
 * nanoseconds since the epoch. Returns 0 or -EINVAL (anything else,
 * including a field out of range: month 13, second 61). */
int tb_unit_parse_wallclock(const char *s, int64_t *epoch_ns);

#ifdef __cplusplus
}
#endif
#endif
