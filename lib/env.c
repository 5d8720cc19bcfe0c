/* env.c - collect and print the measurement environment (see tailbus/env.h).
 *
 * Each field comes from one place in /proc or /sys (or uname, CPUID, the
 * compiler), read with open/read into a bounded stack buffer: no stdio, no
 * allocation, no state kept between calls. A source that cannot be read
 * leaves "unknown"; a feature the machine does not have reads "none". After
 * collecting, every field is cleaned (control characters become spaces,
 * bytes that are not UTF-8 become '?'), so the formatters only have to quote
 * '"' and '\' for JSON and bound the length for log headers.
 *
 * The fields are described once, in `fields` below (key, offset, size); the
 * three formatters and the accessors walk that table in its order.
 */
#include "tailbus/env.h"
#include "tailbus/json.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TB_ENV_X86 1
#endif

/* Set by the build (meson passes the project version and `git rev-parse`):
 * meson.build's project version is the one place the version is written. */
#ifndef TB_VERSION
#error "TB_VERSION is meson.build's project version: lib/meson.build passes it"
#endif
#ifndef TB_GIT_COMMIT
#define TB_GIT_COMMIT "unknown"
#endif

#define UNKNOWN "unknown"
#define NONE "none"

#define SYS_CPU "/sys/devices/system/cpu"
#define SYS_HUGEPAGES "/sys/kernel/mm/hugepages"
#define SYS_THP "/sys/kernel/mm/transparent_hugepage"
#define SYS_CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0"

/* The first processor block of /proc/cpuinfo (model name, flags) fits with
 * room to spare: an x86 flags line is about 1.7 KiB today. */
#define CPUINFO_READ_MAX 16384
/* Upper bound on the CPUs whose governor is read (Linux's NR_CPUS maximum). */
#define GOVERNOR_CPUS_MAX 8192
/* Distinct governors counted separately; more are summed as "other". */
#define GOVERNOR_KINDS_MAX 8
/* Huge page sizes listed (x86 has 2, arm64 up to 4). */
#define HUGEPAGE_SIZES_MAX 8
/* A sysfs value of one number or one word. */
#define SMALL_READ_MAX 64
/* CPUID leaves: the hypervisor bit, and the hypervisor's vendor leaf. */
#define CPUID_FEATURES 1
#define CPUID_HYPERVISOR_BIT (1u << 31)
#define CPUID_HYPERVISOR_VENDOR 0x40000000u

struct field {
	const char *key;
	size_t offset;
	size_t size;
};

#define FIELD(name) {#name, offsetof(tb_env, name), sizeof(((tb_env *)0)->name)}
static const struct field fields[] = {
	FIELD(hostname),  FIELD(machine),     FIELD(kernel),       FIELD(cmdline),
	FIELD(cpu_model), FIELD(cpus),        FIELD(cpus_online),  FIELD(cpus_allowed),
	FIELD(hypervisor), FIELD(governor),   FIELD(isolcpus),     FIELD(nohz_full),
	FIELD(hugepages), FIELD(thp),         FIELD(thp_defrag),   FIELD(clocksource),
	FIELD(clocksources), FIELD(tsc_flags), FIELD(compiler),    FIELD(version),
	FIELD(commit),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Every header line fits in TB_ENV_HEADER_CAP. */
_Static_assert(NFIELDS * TB_ENV_HEADER_LINE_MAX + 1 <= TB_ENV_HEADER_CAP,
	       "TB_ENV_HEADER_CAP too small for one line per field");

size_t tb_env_count(void)
{
	return NFIELDS;
}

const char *tb_env_key(size_t i)
{
	return i < NFIELDS ? fields[i].key : NULL;
}

const char *tb_env_value(const tb_env *e, size_t i)
{
	return e && i < NFIELDS ? (const char *)e + fields[i].offset : NULL;
}

const char *tb_env_get(const tb_env *e, const char *key)
{
	for (size_t i = 0; key && i < NFIELDS; i++)
		if (!strcmp(fields[i].key, key))
			return tb_env_value(e, i);
	return NULL;
}

/* ---- reading ---- */

/* Up to cap-1 bytes of a file, NUL-terminated, trailing white space removed.
 * Returns the length or a negative errno (buf is then ""). */
static ssize_t read_text(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			buf[0] = '\0';
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	return (ssize_t)len;
}

static void set(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, cap, fmt, ap);
	va_end(ap);
}

/* Append to a field, keeping it NUL-terminated (cut short when full). */
static void append(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *dst, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(dst);
	if (len + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst + len, cap - len, fmt, ap);
	va_end(ap);
}

/* A whole file into a field; "unknown" when it cannot be read, `empty` when
 * it reads as nothing. */
static void field_from_file(char *dst, size_t cap, const char *path, const char *empty)
{
	ssize_t n = read_text(path, dst, cap);
	if (n < 0)
		set(dst, cap, UNKNOWN);
	else if (n == 0)
		set(dst, cap, "%s", empty);
}

/* The bracketed choice of a sysfs selector ("always [madvise] never"). */
static void bracketed_choice(char *dst, size_t cap, const char *path)
{
	char buf[TB_ENV_TEXT_MAX];
	set(dst, cap, UNKNOWN);
	if (read_text(path, buf, sizeof(buf)) <= 0)
		return;
	char *open = strchr(buf, '['), *close = open ? strchr(open, ']') : NULL;
	if (open && close)
		set(dst, cap, "%.*s", (int)(close - open - 1), open + 1);
}

/* The value of `name=` on the kernel command line (the last one given, as
 * the kernel does), up to the "--" that starts init's arguments. Returns
 * false when absent. */
static bool cmdline_param(const char *cmdline, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	bool found = false;
	const char *p = cmdline;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *end = p;
		while (*end && *end != ' ')
			end++;
		size_t len = (size_t)(end - p);
		if (len == 2 && !strncmp(p, "--", 2))
			break;
		if (len > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
			set(out, cap, "%.*s", (int)(len - nlen - 1), p + nlen + 1);
			found = true;
		}
		p = end;
	}
	return found;
}

/* ---- the fields ---- */

static void collect_uname(tb_env *e)
{
	struct utsname u;
	if (uname(&u) < 0) {
		set(e->machine, sizeof(e->machine), UNKNOWN);
		set(e->kernel, sizeof(e->kernel), UNKNOWN);
		return;
	}
	set(e->machine, sizeof(e->machine), "%s", u.machine);
	set(e->kernel, sizeof(e->kernel), "%s %s", u.release, u.version);
	if (gethostname(e->hostname, sizeof(e->hostname)) < 0)
		set(e->hostname, sizeof(e->hostname), "%s", u.nodename);
	e->hostname[sizeof(e->hostname) - 1] = '\0';
}

/* The CPU flags worth knowing before trusting a cycle counter. */
static const char *const tsc_flag_names[] = {"tsc",	    "rdtscp",	      "constant_tsc",
					     "nonstop_tsc", "tsc_known_freq", "tsc_reliable",
					     "tsc_adjust"};

bool tb_env_has_word(const char *list, size_t len, const char *word)
{
	size_t wlen = strlen(word);
	const char *p = list, *end = list + len;
	while (p < end) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		const char *q = p;
		while (q < end && !isspace((unsigned char)*q))
			q++;
		if ((size_t)(q - p) == wlen && !strncmp(p, word, wlen))
			return true;
		p = q;
	}
	return false;
}

static void tsc_flags_from(tb_env *e, const char *flags, size_t len)
{
	e->tsc_flags[0] = '\0';
	for (size_t i = 0; i < sizeof(tsc_flag_names) / sizeof(tsc_flag_names[0]); i++)
		if (tb_env_has_word(flags, len, tsc_flag_names[i]))
			append(e->tsc_flags, sizeof(e->tsc_flags), "%s%s", e->tsc_flags[0] ? " " : "",
			       tsc_flag_names[i]);
	if (!e->tsc_flags[0])
		set(e->tsc_flags, sizeof(e->tsc_flags), NONE);
}

/* "model name" and "flags" of the first processor in /proc/cpuinfo. Only
 * whole lines are looked at: a line cut by the read bound is ignored. */
static void collect_cpuinfo(tb_env *e)
{
	char buf[CPUINFO_READ_MAX];
	set(e->cpu_model, sizeof(e->cpu_model), UNKNOWN);
#ifdef TB_ENV_X86
	set(e->tsc_flags, sizeof(e->tsc_flags), UNKNOWN);
#else
	set(e->tsc_flags, sizeof(e->tsc_flags), NONE);
#endif
	ssize_t n = read_text("/proc/cpuinfo", buf, sizeof(buf));
	if (n <= 0)
		return;
	for (char *line = buf; *line && *line != '\n';) {
		char *nl = strchr(line, '\n');
		if (!nl && (size_t)n + 1 >= sizeof(buf))
			break; /* cut by the bound */
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *colon = memchr(line, ':', len);
		if (colon) {
			size_t klen = (size_t)(colon - line);
			while (klen > 0 && isspace((unsigned char)line[klen - 1]))
				klen--;
			const char *val = colon + 1;
			while (*val == ' ')
				val++;
			size_t vlen = len - (size_t)(val - line);
			if (klen == 10 && !strncmp(line, "model name", 10))
				set(e->cpu_model, sizeof(e->cpu_model), "%.*s", (int)vlen, val);
#ifdef TB_ENV_X86
			else if (klen == 5 && !strncmp(line, "flags", 5))
				tsc_flags_from(e, val, vlen);
#endif
		}
		if (!nl)
			break;
		line = nl + 1; /* a blank line ends the first processor's block */
	}
}

static void collect_cpus(tb_env *e)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	if (online > 0)
		set(e->cpus, sizeof(e->cpus), "%ld", online);
	else
		set(e->cpus, sizeof(e->cpus), UNKNOWN);
	field_from_file(e->cpus_online, sizeof(e->cpus_online), SYS_CPU "/online", UNKNOWN);
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		set(e->cpus_allowed, sizeof(e->cpus_allowed), "%d", CPU_COUNT(&allowed));
	else
		set(e->cpus_allowed, sizeof(e->cpus_allowed), UNKNOWN);
}

static void collect_hypervisor(tb_env *e)
{
#ifdef TB_ENV_X86
	unsigned a, b, c, d;
	if (!__get_cpuid(CPUID_FEATURES, &a, &b, &c, &d) || !(c & CPUID_HYPERVISOR_BIT)) {
		set(e->hypervisor, sizeof(e->hypervisor), NONE);
		return;
	}
	char vendor[13] = {0};
	__cpuid(CPUID_HYPERVISOR_VENDOR, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &c, 4);
	memcpy(vendor + 8, &d, 4);
	for (int i = 11; i >= 0 && (vendor[i] == ' ' || vendor[i] == '\0'); i--)
		vendor[i] = '\0'; /* "bhyve bhyve " */
	set(e->hypervisor, sizeof(e->hypervisor), "%s", vendor[0] ? vendor : "present");
#else
	/* Xen exposes its type here; elsewhere we cannot tell. */
	field_from_file(e->hypervisor, sizeof(e->hypervisor), "/sys/hypervisor/type", UNKNOWN);
#endif
}

/* "performance x8" (or "performance x4, powersave x4"); "none" when no CPU
 * has a cpufreq governor (no cpufreq driver, most virtual machines);
 * "unknown" without /sys. */
static void collect_governor(tb_env *e)
{
	struct {
		char name[SMALL_READ_MAX];
		long count;
	} kinds[GOVERNOR_KINDS_MAX];
	size_t nkinds = 0;
	long other = 0;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus <= 0 || ncpus > GOVERNOR_CPUS_MAX)
		ncpus = GOVERNOR_CPUS_MAX;
	for (long cpu = 0; cpu < ncpus; cpu++) {
		char path[96], gov[SMALL_READ_MAX];
		snprintf(path, sizeof(path), SYS_CPU "/cpu%ld/cpufreq/scaling_governor", cpu);
		if (read_text(path, gov, sizeof(gov)) <= 0)
			continue;
		size_t k = 0;
		while (k < nkinds && strcmp(kinds[k].name, gov))
			k++;
		if (k == nkinds && nkinds == GOVERNOR_KINDS_MAX) {
			other++;
			continue;
		}
		if (k == nkinds) {
			memcpy(kinds[k].name, gov, sizeof(gov));
			kinds[k].count = 0;
			nkinds++;
		}
		kinds[k].count++;
	}
	e->governor[0] = '\0';
	for (size_t k = 0; k < nkinds; k++)
		append(e->governor, sizeof(e->governor), "%s%s x%ld", k ? ", " : "", kinds[k].name,
		       kinds[k].count);
	if (other)
		append(e->governor, sizeof(e->governor), ", other x%ld", other);
	if (!nkinds) /* no cpufreq, unless sysfs itself is missing */
		set(e->governor, sizeof(e->governor), access(SYS_CPU, F_OK) == 0 ? NONE : UNKNOWN);
}

/* The CPU list the kernel reports in sysfs ("none" when empty), with the
 * boot parameter beside it when it says more (isolcpus=domain,managed_irq,2-3). */
static void cpu_list_with_param(char *dst, size_t cap, const char *sys_path, const char *param,
				const tb_env *e)
{
	char sys[TB_ENV_TEXT_MAX], arg[TB_ENV_TEXT_MAX];
	ssize_t n = read_text(sys_path, sys, sizeof(sys));
	if (n >= 0 && !strcmp(sys, "(null)")) /* nohz_full when not configured */
		n = 0;
	bool given = cmdline_param(e->cmdline, param, arg, sizeof(arg));
	if (n > 0)
		set(dst, cap, "%s", sys);
	else if (n < 0 && given)
		set(dst, cap, "%s", arg);
	else if (n == 0 || strcmp(e->cmdline, UNKNOWN))
		set(dst, cap, NONE); /* a kernel without the file has no such CPUs either */
	else
		set(dst, cap, UNKNOWN);
	if (n >= 0 && given && strcmp(arg, dst))
		append(dst, cap, " (%s=%s)", param, arg);
}

struct hugepage_size {
	long kb, nr, free;
};

static int by_size(const void *a, const void *b)
{
	const struct hugepage_size *x = a, *y = b;
	return (x->kb > y->kb) - (x->kb < y->kb);
}

/* For each huge page size: "2048kB nr=0 free=0, 1048576kB nr=4 free=4". */
static void collect_hugepages(tb_env *e)
{
	struct hugepage_size sizes[HUGEPAGE_SIZES_MAX];
	size_t n = 0;
	DIR *d = opendir(SYS_HUGEPAGES);
	if (!d) {
		set(e->hugepages, sizeof(e->hugepages), UNKNOWN);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) && n < HUGEPAGE_SIZES_MAX) {
		long kb;
		char unit[4], path[320], num[SMALL_READ_MAX];
		if (sscanf(de->d_name, "hugepages-%ld%3s", &kb, unit) != 2 || strcmp(unit, "kB"))
			continue;
		sizes[n] = (struct hugepage_size){kb, -1, -1};
		snprintf(path, sizeof(path), SYS_HUGEPAGES "/%s/nr_hugepages", de->d_name);
		if (read_text(path, num, sizeof(num)) > 0)
			sizes[n].nr = strtol(num, NULL, 10);
		snprintf(path, sizeof(path), SYS_HUGEPAGES "/%s/free_hugepages", de->d_name);
		if (read_text(path, num, sizeof(num)) > 0)
			sizes[n].free = strtol(num, NULL, 10);
		n++;
	}
	closedir(d);
	qsort(sizes, n, sizeof(sizes[0]), by_size);
	e->hugepages[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		append(e->hugepages, sizeof(e->hugepages), "%s%ldkB", i ? ", " : "", sizes[i].kb);
		if (sizes[i].nr >= 0)
			append(e->hugepages, sizeof(e->hugepages), " nr=%ld", sizes[i].nr);
		if (sizes[i].free >= 0)
			append(e->hugepages, sizeof(e->hugepages), " free=%ld", sizes[i].free);
	}
	if (!n)
		set(e->hugepages, sizeof(e->hugepages), NONE);
}

const char *tb_version(void)
{
	return TB_VERSION;
}

static void collect_build(tb_env *e)
{
#if defined(__clang__)
	set(e->compiler, sizeof(e->compiler), "%s", __VERSION__); /* "Debian Clang 14.0.6" */
#elif defined(__GNUC__)
	set(e->compiler, sizeof(e->compiler), "gcc %s", __VERSION__); /* "12.2.0" */
#else
	set(e->compiler, sizeof(e->compiler), UNKNOWN);
#endif
	set(e->version, sizeof(e->version), "%s", TB_VERSION);
	set(e->commit, sizeof(e->commit), "%s", TB_GIT_COMMIT);
}

/* ---- cleaning ---- */

/* Length of the valid UTF-8 sequence at s (at most `left` bytes), 0 if none.
 * Overlong forms, surrogates and code points past U+10FFFF are invalid. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (left < need + 1 || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i <= need; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return need + 1;
}

/* Control characters become spaces, stray bytes '?'; empty becomes "unknown". */
static void clean(char *s, size_t cap)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		if (p[i] < 0x80) {
			if (p[i] < 0x20 || p[i] == 0x7f)
				p[i] = ' ';
			i++;
			continue;
		}
		size_t n = utf8_len(p + i, len - i);
		if (!n) {
			p[i++] = '?';
			continue;
		}
		i += n;
	}
	if (!len)
		set(s, cap, UNKNOWN);
}

int tb_env_collect(tb_env *e)
{
	if (!e)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	collect_uname(e);
	field_from_file(e->cmdline, sizeof(e->cmdline), "/proc/cmdline", UNKNOWN);
	collect_cpuinfo(e);
	collect_cpus(e);
	collect_hypervisor(e);
	collect_governor(e);
	cpu_list_with_param(e->isolcpus, sizeof(e->isolcpus), SYS_CPU "/isolated", "isolcpus", e);
	cpu_list_with_param(e->nohz_full, sizeof(e->nohz_full), SYS_CPU "/nohz_full", "nohz_full",
			    e);
	collect_hugepages(e);
	bracketed_choice(e->thp, sizeof(e->thp), SYS_THP "/enabled");
	bracketed_choice(e->thp_defrag, sizeof(e->thp_defrag), SYS_THP "/defrag");
	field_from_file(e->clocksource, sizeof(e->clocksource), SYS_CLOCKSOURCE "/current_clocksource",
			UNKNOWN);
	field_from_file(e->clocksources, sizeof(e->clocksources),
			SYS_CLOCKSOURCE "/available_clocksource", NONE);
	collect_build(e);
	for (size_t i = 0; i < NFIELDS; i++)
		clean((char *)e + fields[i].offset, fields[i].size);
	return 0;
}

/* ---- formatting ---- */

int tb_env_format_text(const tb_env *e, FILE *f)
{
	if (!e || !f)
		return -EINVAL;
	for (size_t i = 0; i < NFIELDS; i++)
		fprintf(f, "%-13s %s\n", fields[i].key, tb_env_value(e, i));
	return ferror(f) ? -EIO : 0;
}

int tb_env_format_json(const tb_env *e, FILE *f)
{
	if (!e || !f)
		return -EINVAL;
	fputc('{', f);
	for (size_t i = 0; i < NFIELDS; i++) {
		fprintf(f, "%s\"%s\": ", i ? ", " : "", fields[i].key);
		tb_json_string(f, tb_env_value(e, i));
	}
	fputc('}', f);
	return ferror(f) ? -EIO : 0;
}

#define ELLIPSIS "..."
#define HEADER_SUFFIX "]\n"

/* One header line into out (room for TB_ENV_HEADER_LINE_MAX + 1 bytes):
 * the value cut on a UTF-8 boundary to fit, ']' written as '?' so the line
 * has a single closing bracket. Returns its length. */
static size_t header_line(char *out, const char *key, const char *value)
{
	size_t fixed = strlen(TB_ENV_HEADER_PREFIX) + strlen(key) + 1 + strlen(HEADER_SUFFIX);
	size_t room = TB_ENV_HEADER_LINE_MAX - fixed;
	size_t vlen = strlen(value);
	bool cut = vlen > room;
	if (cut) {
		vlen = room - strlen(ELLIPSIS);
		while (vlen > 0 && ((unsigned char)value[vlen] & 0xC0) == 0x80)
			vlen--; /* do not split a UTF-8 sequence */
	}
	size_t len = (size_t)sprintf(out, TB_ENV_HEADER_PREFIX "%s=", key);
	for (size_t i = 0; i < vlen; i++)
		out[len++] = value[i] == ']' ? '?' : value[i];
	len += (size_t)sprintf(out + len, "%s" HEADER_SUFFIX, cut ? ELLIPSIS : "");
	return len;
}

int tb_env_format_header_lines(const tb_env *e, char *buf, size_t cap)
{
	if (!e || !buf || !cap)
		return -EINVAL;
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NFIELDS; i++) {
		char line[TB_ENV_HEADER_LINE_MAX + 1];
		size_t len = header_line(line, fields[i].key, tb_env_value(e, i));
		if (used + len + 1 > cap)
			return -ENOSPC;
		memcpy(buf + used, line, len + 1);
		used += len;
	}
	return (int)used;
}

int tb_env_next_header_line(const char *text, size_t len, size_t *pos, const char **line,
			    size_t *line_len)
{
	size_t prefix = strlen(TB_ENV_HEADER_PREFIX);
	while (*pos < len && text[*pos] == '#') {
		const char *p = text + *pos;
		const char *nl = memchr(p, '\n', len - *pos);
		size_t n = nl ? (size_t)(nl - p) : len - *pos;
		*pos += n + (nl ? 1 : 0);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
			n--;
		if (n > prefix && !memcmp(p, TB_ENV_HEADER_PREFIX, prefix) && p[n - 1] == ']' &&
		    memchr(p, '=', n)) {
			*line = p;
			*line_len = n;
			return 1;
		}
	}
	return 0;
}
