/* tailbus/env.h - the machine, kernel and build a measurement was taken on.
 *
 * A latency figure means little without the machine behind it: the kernel
 * and its command line, the CPU, the frequency governor, isolated cores,
 * huge pages, the clocksource, the compiler and the commit. tb_env_collect()
 * gathers them into caller memory (a struct of fixed-size strings, nothing
 * allocated, nothing kept), and three formatters write them out: aligned text
 * for people, one JSON object for reports, and '#[env key=value]' comment
 * lines for the header of an interval log.
 *
 * Invariants:
 *   - every field is a NUL-terminated, valid UTF-8 string without control
 *     characters, never empty: "unknown" when the source could not be read,
 *     "none" when the feature is absent (no cpufreq, no isolated CPUs);
 *   - every file read is bounded by the size of its field (a longer source is
 *     cut short, on a UTF-8 boundary); collecting never fails.
 *
 * Header lines: HdrHistogram_c's log reader reads header lines with
 * fgets(line, 128), so a line of 128 bytes or more (newline included) ends its
 * header early. Each line here is at most TB_ENV_HEADER_LINE_MAX bytes,
 * newline included; a longer value is cut and ends in "...". The lines start
 * with "#[env " so that no reader mistakes them for StartTime, BaseTime or
 * the format version; Java and C readers skip them as comments. Write them
 * before the legend line (HdrHistogram_c stops reading comments there).
 */
#ifndef TAILBUS_ENV_H
#define TAILBUS_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Field sizes, NUL included. */
#define TB_ENV_NAME_MAX 65     /* struct utsname fields: _UTSNAME_LENGTH */
#define TB_ENV_KERNEL_MAX 132  /* release, a space, version */
#define TB_ENV_CMDLINE_MAX 2048 /* COMMAND_LINE_SIZE on x86 */
#define TB_ENV_SHORT_MAX 32
#define TB_ENV_TEXT_MAX 256

/* Longest header line, '\n' included: HdrHistogram_c reads 127 at a time. */
#define TB_ENV_HEADER_LINE_MAX 127
#define TB_ENV_HEADER_PREFIX "#[env "

typedef struct tb_env {
	char hostname[TB_ENV_NAME_MAX];
	char machine[TB_ENV_NAME_MAX];     /* uname -m */
	char kernel[TB_ENV_KERNEL_MAX];    /* uname -r -v */
	char cmdline[TB_ENV_CMDLINE_MAX];  /* /proc/cmdline */
	char cpu_model[TB_ENV_TEXT_MAX];   /* /proc/cpuinfo "model name" */
	char cpus[TB_ENV_SHORT_MAX];       /* number of CPUs online */
	char cpus_online[TB_ENV_TEXT_MAX]; /* their list, "0-7" */
	char cpus_allowed[TB_ENV_SHORT_MAX]; /* CPUs this process may run on */
	char hypervisor[TB_ENV_SHORT_MAX]; /* CPUID vendor, "none" on bare metal */
	char governor[TB_ENV_TEXT_MAX];    /* "performance x8", "none" without cpufreq */
	char isolcpus[TB_ENV_TEXT_MAX];
	char nohz_full[TB_ENV_TEXT_MAX];
	char hugepages[TB_ENV_TEXT_MAX];   /* per size: "2048kB nr=0 free=0" */
	char thp[TB_ENV_SHORT_MAX];        /* transparent_hugepage/enabled choice */
	char thp_defrag[TB_ENV_SHORT_MAX];
	char clocksource[TB_ENV_SHORT_MAX];
	char clocksources[TB_ENV_TEXT_MAX]; /* available */
	char tsc_flags[TB_ENV_TEXT_MAX];   /* TSC-related CPU flags present */
	char compiler[TB_ENV_TEXT_MAX];    /* __VERSION__ of the library's build */
	char version[TB_ENV_SHORT_MAX];    /* tailbus version (TB_VERSION) */
	char commit[TB_ENV_SHORT_MAX];     /* git commit (TB_GIT_COMMIT) */
} tb_env;

/* The tailbus version this library was built as: meson.build's project
 * version, the one string every program's --version prints. */
const char *tb_version(void);

/* Number of fields, and each one's key and value in the order above (the
 * keys are the JSON keys and the header-line keys). NULL past the end. */
size_t tb_env_count(void);
const char *tb_env_key(size_t i);
const char *tb_env_value(const tb_env *e, size_t i);
/* The value of `key`, or NULL for an unknown key. */
const char *tb_env_get(const tb_env *e, const char *key);

/* Whether `word` is one of the blank-separated words of the len bytes at
 * list: a /proc/cpuinfo flags line, or a list field such as clocksources,
 * tsc_flags or cmdline ("tsc" does not match "constant_tsc"). */
bool tb_env_has_word(const char *list, size_t len, const char *word);

/* Fill `e`. Returns 0, or -EINVAL for a NULL pointer; an unreadable source
 * gives "unknown" in its field, never an error. */
int tb_env_collect(tb_env *e);

/* "key           value" lines. Returns 0 or -EIO. */
int tb_env_format_text(const tb_env *e, FILE *f);
/* One JSON object, every value a string, no trailing newline (so it can be
 * embedded in a larger document). Returns 0 or -EIO. */
int tb_env_format_json(const tb_env *e, FILE *f);

/* Bytes that always hold every header line and the NUL. */
#define TB_ENV_HEADER_CAP 4096
/* One "#[env key=value]\n" line per field into buf (NUL-terminated).
 * Returns the length, or -ENOSPC when cap is too small (buf then holds the
 * whole lines that fit), or -EINVAL. */
int tb_env_format_header_lines(const tb_env *e, char *buf, size_t cap);

/* The '#[env key=value]' lines of a log's header (the '#' lines before its
 * first other line), one per call: start with *pos = 0; returns 1 with *line
 * pointing into text and *line_len its length (no newline, no trailing blanks
 * or CR), or 0 when the header has no more. Never fails. */
int tb_env_next_header_line(const char *text, size_t len, size_t *pos, const char **line,
			    size_t *line_len);

#ifdef __cplusplus
}
#endif
#endif
