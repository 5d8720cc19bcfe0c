/* log_reader.c - reading interval logs written by any HdrHistogram tool.
 *
 * The reader walks text in memory one line at a time. '#' lines are comments,
 * except that "#[StartTime: " and "#[BaseTime: " set the clock the following
 * lines are read against (a concatenated log may carry several). The CSV
 * legend and blank lines are skipped. A data line is an optional "Tag=<tag>,"
 * and exactly four fields: start, length, max, base64 payload.
 *
 * Timestamps follow the Java reader: with no BaseTime line, a first timestamp
 * more than a year before StartTime means the log is relative (base =
 * StartTime), otherwise absolute (base = 0); with no StartTime line the first
 * timestamp is the start.
 *
 * With defer_payload the payload is only located, not decoded: a caller that
 * merges a few tags of a long log decodes just those lines, straight into its
 * merge (tb_v2_decode_base64_add), and vets the rest.
 *
 * Trailing spaces, tabs and a CR end a line without being part of it (logs
 * that passed through Windows tools or editors), as in Java's reader.
 *
 * The text may come in parts (tb_log_reader_feed): the clock and the line
 * count carry over from one part to the next, so a log followed as it grows
 * reads as the same log read whole.
 *
 * A malformed line never ends the read: the reader records its number and the
 * field at fault, skips it and returns -EINVAL; the next call reads on. Input
 * is untrusted: every field is bounded and checked before use.
 */
#include "tailbus/log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tailbus/codec.h"

#define START_TIME_PREFIX "#[StartTime: "
#define BASE_TIME_PREFIX "#[BaseTime: "
#define LEGEND_PREFIX "\"StartTimestamp\""
#define TAG_PREFIX "Tag="
#define DATA_FIELDS 4
#define NUM_FIELD_MAX 64

typedef struct span {
	const char *p;
	size_t n;
} span;

static bool starts_with(span s, const char *prefix)
{
	size_t n = strlen(prefix);
	return s.n >= n && memcmp(s.p, prefix, n) == 0;
}

/* Trailing blanks and a CR (CRLF line ends) are not part of a line: Java's
 * reader takes a line with them as the same line without. */
static size_t trimmed_length(span s)
{
	while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\r'))
		s.n--;
	return s.n;
}

static int reject(tb_log_reader *r, int rc, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->err, sizeof(r->err), "line %zu: ", r->line);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	r->err_line = r->line;
	r->bad_lines++;
	return rc;
}

/* Digits with at most one point, at most 15 digits in all: the value is
 * m / 10^k with m and 10^k exact doubles (m < 2^53, k <= 15), and IEEE
 * division rounds the quotient correctly, so this is the double strtod
 * gives, at a fraction of its cost (every log line has three such fields). */
static bool parse_plain_decimal(span s, double *out)
{
	static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
				       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
	uint64_t m = 0;
	int digits = 0, frac = -1;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];
		if (c >= '0' && c <= '9') {
			if (++digits > 15)
				return false;
			m = m * 10 + (uint64_t)(c - '0');
			if (frac >= 0)
				frac++;
		} else if (c == '.' && frac < 0) {
			frac = 0;
		} else {
			return false;
		}
	}
	if (digits == 0)
		return false;
	*out = (double)m / pow10[frac > 0 ? frac : 0];
	return true;
}

/* A plain decimal number: digits, one point, an exponent; nothing else. */
static bool parse_number(span s, double *out)
{
	if (parse_plain_decimal(s, out))
		return true;
	char buf[NUM_FIELD_MAX];
	if (s.n == 0 || s.n >= sizeof(buf))
		return false;
	for (size_t i = 0; i < s.n; i++) {
		if (!strchr("0123456789.+-eE", s.p[i]))
			return false;
	}
	memcpy(buf, s.p, s.n);
	buf[s.n] = '\0';
	char *end;
	*out = strtod(buf, &end);
	return *end == '\0' && isfinite(*out);
}

/* Shows a field in an error message without flooding it. */
static int shown(span s)
{
	return s.n > 40 ? 40 : (int)s.n;
}

static void header_line(tb_log_reader *r, span s)
{
	double v;
	bool start = starts_with(s, START_TIME_PREFIX);
	if (!start && !starts_with(s, BASE_TIME_PREFIX))
		return;
	size_t skip = strlen(start ? START_TIME_PREFIX : BASE_TIME_PREFIX);
	span num = {s.p + skip, 0};
	while (skip + num.n < s.n && !strchr(" ,]", num.p[num.n]))
		num.n++;
	if (!parse_number(num, &v))
		return;
	if (start) {
		r->start_time_sec = v;
		r->have_start = true;
	} else {
		r->base_time_sec = v;
		r->have_base = true;
	}
}

/* Comma-separated fields; more than `max` gives max + 1. memchr, not a
 * byte loop: the last field is the payload, most of the line. */
static int split_fields(span s, span *f, int max)
{
	const char *p = s.p, *end = s.p + s.n;
	for (int n = 0;; n++) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		if (!comma) {
			f[n] = (span){p, (size_t)(end - p)};
			return n + 1;
		}
		if (n + 1 == max)
			return max + 1;
		f[n] = (span){p, (size_t)(comma - p)};
		p = comma + 1;
	}
}

static int take_tag(tb_log_reader *r, span *s, tb_log_entry *e)
{
	e->tag[0] = '\0';
	if (!starts_with(*s, TAG_PREFIX)) {
		const char *eq = memchr(s->p, '=', s->n);
		const char *comma = memchr(s->p, ',', s->n);
		if (eq && (!comma || eq < comma))
			return reject(r, -EINVAL, "unknown key '%.*s' (only Tag= is allowed)",
				      (int)(eq - s->p) > 40 ? 40 : (int)(eq - s->p), s->p);
		return 0;
	}
	const char *t = s->p + strlen(TAG_PREFIX);
	const char *comma = memchr(t, ',', s->n - strlen(TAG_PREFIX));
	size_t n = comma ? (size_t)(comma - t) : s->n - strlen(TAG_PREFIX);
	if (n == 0 || n >= TB_LOG_TAG_MAX || memchr(t, ' ', n))
		return reject(r, -EINVAL, "tag: empty, too long or contains a space");
	memcpy(e->tag, t, n);
	e->tag[n] = '\0';
	size_t used = strlen(TAG_PREFIX) + n + (comma ? 1 : 0);
	s->p += used;
	s->n -= used;
	return 0;
}

static int data_line(tb_log_reader *r, span s, tb_log_entry *e)
{
	span f[DATA_FIELDS];
	static const char *names[] = {"start timestamp", "interval length", "interval max"};
	double v[3];
	int rc = take_tag(r, &s, e);
	if (rc < 0)
		return rc;
	int n = split_fields(s, f, DATA_FIELDS);
	if (n != DATA_FIELDS)
		return reject(r, -EINVAL, "expected %d fields (start,length,max,histogram), found %s%d",
			      DATA_FIELDS, n > DATA_FIELDS ? "more than " : "",
			      n > DATA_FIELDS ? DATA_FIELDS : n);
	for (int i = 0; i < 3; i++) {
		if (!parse_number(f[i], &v[i]))
			return reject(r, -EINVAL, "%s '%.*s' is not a number", names[i], shown(f[i]),
				      f[i].p);
	}
	if (v[1] < 0)
		return reject(r, -EINVAL, "interval length is negative");
	const char *why = "unknown";
	e->payload = f[3].p;
	e->payload_len = f[3].n;
	if (!r->defer_payload)
		rc = tb_v2_decode_base64(f[3].p, f[3].n, &e->hist, &why);
	else if (!r->have_start || !r->have_base) /* a bad line must not set the clock */
		rc = tb_v2_check_base64(f[3].p, f[3].n, &why);
	if (rc < 0)
		return reject(r, rc, "histogram payload: %s", why);
	if (!r->have_start) {
		r->start_time_sec = v[0];
		r->have_start = true;
	}
	if (!r->have_base) {
		r->base_time_sec = v[0] < r->start_time_sec - TB_LOG_RELATIVE_THRESHOLD_SEC
					   ? r->start_time_sec : 0.0;
		r->have_base = true;
	}
	e->line = r->line;
	e->start_field = v[0];
	e->start_abs_sec = v[0] + r->base_time_sec;
	e->offset_sec = e->start_abs_sec - r->start_time_sec;
	e->length_sec = v[1];
	e->max_field = v[2];
	return 1;
}

void tb_log_reader_init(tb_log_reader *r, const char *text, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->text = text;
	r->len = len;
}

void tb_log_reader_feed(tb_log_reader *r, const char *text, size_t len)
{
	r->text = text;
	r->len = len;
	r->pos = 0;
}

int tb_log_reader_next(tb_log_reader *r, tb_log_entry *e)
{
	while (r->pos < r->len) {
		span s = {r->text + r->pos, 0};
		const char *nl = memchr(s.p, '\n', r->len - r->pos);
		s.n = nl ? (size_t)(nl - s.p) : r->len - r->pos;
		r->pos += s.n + (nl ? 1 : 0);
		r->line++;
		s.n = trimmed_length(s);
		if (s.n == 0 || starts_with(s, LEGEND_PREFIX))
			continue;
		if (s.p[0] == '#') {
			header_line(r, s);
			continue;
		}
		return data_line(r, s, e);
	}
	return 0;
}

void tb_log_entry_free(tb_log_entry *e)
{
	tb_hist_free(&e->hist);
}

int tb_read_file(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;
			free(buf);
			close(fd);
			return err;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*text = buf;
	*len = got;
	return 0;
}
