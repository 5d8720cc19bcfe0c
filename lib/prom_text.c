/* prom_text.c - the Prometheus text exposition 0.0.4, and content negotiation.
 *
 * A family is written whole: "# HELP", "# TYPE", then its series, one line
 * each; a histogram as its classic `le` buckets (cumulative, +Inf last),
 * `_sum` and `_count`. Label values are escaped as the format says (\\, \"
 * and \n); tailbus's own names need no escaping, a user's host name might.
 */
#include "tailbus/prom.h"
#include "tailbus/grow.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffers grow by doubling from this. */
#define BUF_INITIAL 4096
#define LE_BUF 32

static int reserve(tb_prom_buf *b, size_t more)
{
	return tb_grow((void **)&b->data, &b->cap, b->len + more, BUF_INITIAL);
}

void tb_prom_buf_free(tb_prom_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static int put(tb_prom_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats straight into the free space; only a line that does not fit is
 * formatted again after the buffer grows. */
#define LINE_ROOM 256

static int put(tb_prom_buf *b, const char *fmt, ...)
{
	if (reserve(b, LINE_ROOM) < 0)
		return -ENOMEM;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	if ((size_t)n >= b->cap - b->len) {
		if (reserve(b, (size_t)n + 1) < 0)
			return -ENOMEM;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

static int put_escaped(tb_prom_buf *b, const char *s)
{
	for (; *s; s++) {
		int rc = *s == '\\' ? put(b, "\\\\") : *s == '"' ? put(b, "\\\"") :
			 *s == '\n' ? put(b, "\\n") : put(b, "%c", *s);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int put_label(tb_prom_buf *b, const char *name, const char *value, bool *first)
{
	if (!value)
		return 0;
	int rc = put(b, "%s%s=\"", *first ? "" : ",", name);
	*first = false;
	if (rc == 0)
		rc = put_escaped(b, value);
	return rc ? rc : put(b, "\"");
}

/* NAME{bus="..",metric="..",host=".."[,le=".."]} */
static int put_series(tb_prom_buf *b, const char *name, const char *suffix, const tb_prom_labels *l,
		      const char *le)
{
	bool first = true;
	int rc = put(b, "%s%s{", name, suffix);
	if (rc == 0)
		rc = put_label(b, "bus", l->bus, &first);
	if (rc == 0)
		rc = put_label(b, "metric", l->metric, &first);
	if (rc == 0)
		rc = put_label(b, "host", l->host, &first);
	if (rc == 0)
		rc = put_label(b, "le", le, &first);
	return rc ? rc : put(b, "} ");
}

/* Whole numbers (counts) exactly, others to 9 significant digits. */
#define EXACT_INTEGER_MAX 9007199254740992.0 /* 2^53 */
#define VALUE_DIGITS 9

static int put_value(tb_prom_buf *b, double v)
{
	if (v == floor(v) && fabs(v) < EXACT_INTEGER_MAX)
		return put(b, "%.0f\n", v);
	return put(b, "%.*g\n", VALUE_DIGITS, v);
}

/* The bucket lines: the series' name and labels are written once, then
 * copied before each bucket's le and count. */
static int text_buckets(tb_prom_buf *b, const char *name, const tb_prom_labels *l,
			const tb_prom_classic *c)
{
	tb_prom_buf prefix = {0};
	int rc = put_series(&prefix, name, "_bucket", l, NULL);
	/* put_series ends "} ": the bucket lines go on with ,le="..."} */
	size_t keep = prefix.len >= 2 ? prefix.len - 2 : 0;
	bool no_labels = keep > 0 && prefix.data[keep - 1] == '{';
	char le[LE_BUF];
	for (int k = 0; rc == 0 && k <= TB_PROM_CLASSIC_BOUNDS; k++) {
		if (k < TB_PROM_CLASSIC_BOUNDS)
			tb_prom_classic_le(k, le, sizeof(le));
		else
			snprintf(le, sizeof(le), "+Inf");
		rc = put(b, "%.*s%sle=\"%s\"} %" PRIu64 "\n", (int)keep, prefix.data, no_labels ? "" : ",",
			 le, c->cumulative[k]);
	}
	tb_prom_buf_free(&prefix);
	return rc;
}

static int text_histogram(tb_prom_buf *b, const char *name, const tb_prom_labels *l, const tb_hist *h)
{
	tb_prom_classic c;
	tb_prom_classic_from_hist(h, &c);
	int rc = text_buckets(b, name, l, &c);
	if (rc == 0)
		rc = put_series(b, name, "_sum", l, NULL);
	if (rc == 0)
		rc = put_value(b, c.sum);
	if (rc == 0)
		rc = put_series(b, name, "_count", l, NULL);
	return rc ? rc : put(b, "%" PRIu64 "\n", c.cumulative[TB_PROM_CLASSIC_BOUNDS]);
}

static const char *type_name(enum tb_prom_type t)
{
	return t == TB_PROM_COUNTER ? "counter" : t == TB_PROM_GAUGE ? "gauge" : "histogram";
}

int tb_prom_text_family(tb_prom_buf *b, const tb_prom_family *f)
{
	int rc = put(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, type_name(f->type));
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		if (f->type == TB_PROM_HISTOGRAM) {
			rc = text_histogram(b, f->name, &f->labels[i], f->hists[i]);
		} else {
			rc = put_series(b, f->name, "", &f->labels[i], NULL);
			if (rc == 0)
				rc = put_value(b, f->values[i]);
		}
	}
	return rc;
}
