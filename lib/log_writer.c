/* log_writer.c - formatting interval log headers and lines (format 1.3).
 *
 * The header always carries both StartTime and BaseTime, so readers never
 * have to guess whether timestamps are relative, and every header line stays
 * short (HdrHistogram_c's reader rejects header lines of 128 bytes or more).
 * Data lines hold nothing but the four fields and an optional tag: anything
 * else tailbus records goes beside the log, never in it, so the Java, C and
 * JavaScript readers all read what we write.
 *
 * Numbers are printed with Java's rounding (javafmt.c) so that a log we
 * rewrite from a Java log keeps its timestamps digit for digit.
 */
#include "tailbus/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tailbus/codec.h"
#include "tailbus/report.h"
#include "tailbus/grow.h"

#define NUM_BUF 64
/* "Tag=" + tag + three numeric fields with separators + newline + NUL */
#define LINE_OVERHEAD (4 + TB_LOG_TAG_MAX + 3 * NUM_BUF + 8)
/* HdrHistogram_c refuses header lines of 128 bytes or more. */
#define HEADER_LINE_MAX 127
#define LOG_TIMESTAMP_DIGITS 3

bool tb_log_tag_valid(const char *tag)
{
	if (!tag || !*tag || strlen(tag) >= TB_LOG_TAG_MAX)
		return false;
	return strpbrk(tag, ", \r\n") == NULL;
}

static int appendf(char *buf, size_t cap, size_t *o, const char *s)
{
	size_t n = strlen(s);
	if (*o + n + 1 > cap)
		return -ENOSPC;
	memcpy(buf + *o, s, n + 1);
	*o += n;
	return 0;
}

/* Every line of `lines` begins with '#' and ends with a newline. */
static bool comment_lines_valid(const char *lines)
{
	for (const char *p = lines; *p; p = strchr(p, '\n') + 1) {
		if (*p != '#' || !strchr(p, '\n'))
			return false;
	}
	return true;
}

int tb_log_format_header_lines(char *buf, size_t cap, const char *comment, const char *lines,
			       double start_time_sec, double base_time_sec)
{
	char line[4 * NUM_BUF + HEADER_LINE_MAX], start[NUM_BUF], base[NUM_BUF], date[NUM_BUF];
	size_t o = 0;
	int rc = 0;
	if (comment && (strpbrk(comment, "]\r\n") || strlen(comment) + 4 > HEADER_LINE_MAX))
		return -EINVAL;
	if (lines && !comment_lines_valid(lines))
		return -EINVAL;
	time_t secs = (time_t)start_time_sec;
	struct tm tm;
	gmtime_r(&secs, &tm);
	strftime(date, sizeof(date), "%a %b %d %H:%M:%S UTC %Y", &tm);
	tb_fmt_java_fixed(start, sizeof(start), start_time_sec, 0, LOG_TIMESTAMP_DIGITS);
	tb_fmt_java_fixed(base, sizeof(base), base_time_sec, 0, LOG_TIMESTAMP_DIGITS);
	if (comment) {
		snprintf(line, sizeof(line), "#[%s]\n", comment);
		rc |= appendf(buf, cap, &o, line);
	}
	if (lines)
		rc |= appendf(buf, cap, &o, lines);
	rc |= appendf(buf, cap, &o, "#[Histogram log format version " TB_LOG_FORMAT_VERSION "]\n");
	snprintf(line, sizeof(line), "#[StartTime: %s (seconds since epoch), %s]\n", start, date);
	rc |= appendf(buf, cap, &o, line);
	snprintf(line, sizeof(line), "#[BaseTime: %s (seconds since epoch)]\n", base);
	rc |= appendf(buf, cap, &o, line);
	rc |= appendf(buf, cap, &o,
		      "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
		      "\"Interval_Compressed_Histogram\"\n");
	return rc ? -ENOSPC : (int)o;
}

int tb_log_format_header(char *buf, size_t cap, const char *comment, double start_time_sec,
			 double base_time_sec)
{
	return tb_log_format_header_lines(buf, cap, comment, NULL, start_time_sec, base_time_sec);
}

size_t tb_log_line_bound(const tb_hist *h)
{
	return LINE_OVERHEAD + tb_base64_encoded_len(tb_v2_frame_bound(h));
}

size_t tb_log_line_base64_bound(size_t payload_len)
{
	return LINE_OVERHEAD + payload_len;
}

/* The optional tag and the three numeric fields, each followed by a comma,
 * at buf + *o; max_field is the third field as written. 0 or a negative
 * errno. */
static int format_fields(char *buf, size_t cap, size_t *o, const char *tag, double start_rel_sec,
			 double length_sec, double max_field)
{
	char start[NUM_BUF], len[NUM_BUF], max[NUM_BUF];
	int rc = 0;
	if (tag && *tag) {
		if (!tb_log_tag_valid(tag))
			return -EINVAL;
		rc |= appendf(buf, cap, o, "Tag=");
		rc |= appendf(buf, cap, o, tag);
		rc |= appendf(buf, cap, o, ",");
	}
	tb_fmt_java_fixed(start, sizeof(start), start_rel_sec, 0, LOG_TIMESTAMP_DIGITS);
	tb_fmt_java_fixed(len, sizeof(len), length_sec, 0, LOG_TIMESTAMP_DIGITS);
	tb_fmt_java_fixed(max, sizeof(max), max_field, 0, LOG_TIMESTAMP_DIGITS);
	rc |= appendf(buf, cap, o, start);
	rc |= appendf(buf, cap, o, ",");
	rc |= appendf(buf, cap, o, len);
	rc |= appendf(buf, cap, o, ",");
	rc |= appendf(buf, cap, o, max);
	rc |= appendf(buf, cap, o, ",");
	return rc ? -ENOSPC : 0;
}

/* The newline and NUL that end a line of length o. */
static int end_line(char *buf, size_t cap, size_t o)
{
	if (o + 2 > cap)
		return -ENOSPC;
	buf[o++] = '\n';
	buf[o] = '\0';
	return (int)o;
}

int tb_log_format_line_frame(char *buf, size_t cap, const char *tag, double start_rel_sec,
			     double length_sec, int64_t max_value, const uint8_t *frame,
			     size_t frame_len)
{
	size_t o = 0, b64_len;
	int rc = format_fields(buf, cap, &o, tag, start_rel_sec, length_sec,
			       (double)max_value / TB_LOG_MAX_UNIT_RATIO);
	if (rc < 0)
		return rc;
	rc = tb_base64_encode(frame, frame_len, buf + o, cap - o, &b64_len);
	if (rc < 0)
		return rc;
	return end_line(buf, cap, o + b64_len);
}

int tb_log_format_line_base64(char *buf, size_t cap, const char *tag, double start_rel_sec,
			      double length_sec, double max_field, const char *payload,
			      size_t payload_len)
{
	size_t o = 0;
	int rc = format_fields(buf, cap, &o, tag, start_rel_sec, length_sec, max_field);
	if (rc < 0)
		return rc;
	if (memchr(payload, '\n', payload_len))
		return -EINVAL;
	if (payload_len > cap - o)
		return -ENOSPC;
	memcpy(buf + o, payload, payload_len);
	return end_line(buf, cap, o + payload_len);
}

int tb_log_format_line(char *buf, size_t cap, const char *tag, double start_rel_sec,
		       double length_sec, const tb_hist *h, int zlevel, uint8_t *scratch,
		       size_t scratch_cap)
{
	size_t inner_cap = tb_v2_inner_bound(h), inner_len, frame_len;
	if (scratch_cap < inner_cap + tb_v2_frame_bound(h))
		return -ENOSPC;
	uint8_t *frame = scratch + inner_cap;
	int rc = tb_v2_encode_inner(h, scratch, inner_cap, &inner_len);
	if (rc == 0)
		rc = tb_v2_compress(scratch, inner_len, zlevel, frame, scratch_cap - inner_cap,
				    &frame_len);
	if (rc < 0)
		return rc;
	return tb_log_format_line_frame(buf, cap, tag, start_rel_sec, length_sec, tb_hist_max(h),
					frame, frame_len);
}

/* ---- stdio wrapper ---- */

int tb_log_writer_open(tb_log_writer *w, FILE *f, const char *comment, double start_time_sec,
		       double base_time_sec, int zlevel)
{
	char header[5 * (HEADER_LINE_MAX + 1) + 1];
	memset(w, 0, sizeof(*w));
	int n = tb_log_format_header(header, sizeof(header), comment, start_time_sec, base_time_sec);
	if (n < 0)
		return n;
	w->f = f;
	w->base_time_sec = base_time_sec;
	w->zlevel = zlevel;
	if (fwrite(header, 1, (size_t)n, f) != (size_t)n)
		return -EIO;
	return 0;
}

/* Grow a buffer to at least `need` bytes. */
static int reserve(void **buf, size_t *cap, size_t need)
{
	return tb_grow(buf, cap, need, need);
}

int tb_log_writer_append(tb_log_writer *w, const char *tag, double start_abs_sec,
			 double length_sec, const tb_hist *h)
{
	size_t scratch_need = tb_v2_inner_bound(h) + tb_v2_frame_bound(h);
	if (reserve((void **)&w->line, &w->line_cap, tb_log_line_bound(h)) ||
	    reserve((void **)&w->scratch, &w->scratch_cap, scratch_need))
		return -ENOMEM;
	int n = tb_log_format_line(w->line, w->line_cap, tag, start_abs_sec - w->base_time_sec,
				   length_sec, h, w->zlevel, w->scratch, w->scratch_cap);
	if (n < 0)
		return n;
	if (fwrite(w->line, 1, (size_t)n, w->f) != (size_t)n)
		return -EIO;
	return 0;
}

void tb_log_writer_close(tb_log_writer *w)
{
	free(w->line);
	free(w->scratch);
	w->line = NULL;
	w->scratch = NULL;
	w->line_cap = w->scratch_cap = 0;
}

int tb_log_format_open_loop_tag(char *buf, size_t cap, const char *tag)
{
	if (*tag && !tb_log_tag_valid(tag))
		return -EINVAL;
	int n = *tag ? snprintf(buf, cap, "%s%s]\n", TB_OPEN_LOOP_TAG_PREFIX, tag)
		     : snprintf(buf, cap, "%s\n", TB_OPEN_LOOP_UNTAGGED);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

#define SOURCE_CUT "..."

int tb_log_format_source(char *buf, size_t cap, const char *tag, const char *path)
{
	if (*tag && !tb_log_tag_valid(tag))
		return -EINVAL;
	int head = snprintf(buf, cap, "%s%s%s file=", TB_LOG_SOURCE_PREFIX, *tag ? "tag=" : "untagged",
			    tag);
	size_t tail = strlen("]\n"), plen = strlen(path), cut = strlen(SOURCE_CUT);
	if (head < 0 || (size_t)head + cut + 1 + tail >= cap)
		return -ENOSPC;
	size_t room = cap - 1 - (size_t)head - tail;
	size_t o = (size_t)head;
	if (plen > room) {
		memcpy(buf + o, SOURCE_CUT, cut);
		o += cut;
		path += plen - (room - cut);
		plen = room - cut;
	}
	for (size_t i = 0; i < plen; i++) {
		unsigned char c = (unsigned char)path[i];
		buf[o++] = c < 0x20 || c == 0x7f || c == ']' ? '?' : (char)c;
	}
	memcpy(buf + o, "]\n", tail + 1);
	return (int)(o + tail);
}
