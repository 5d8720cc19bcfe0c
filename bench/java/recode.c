/* recode.c - re-encode every interval of a log with our codec, at several zlib levels.
 *
 *   recode IN.hlog OUT_PREFIX [--lines N] LEVEL...
 *
 * For the log-size comparison with Java's HistogramLogWriter (bench/java/run):
 * each interval of IN (the first N when --lines is given) is decoded, encoded
 * again the way the collector does it (tb_v2_encode_inner, then tb_v2_compress
 * at the level, then tb_log_format_line_frame), and appended to
 * OUT_PREFIX.z<LEVEL>.hlog, one file per level. Tags, start times and lengths
 * are kept, so line k of every output is interval k of the input, as in the
 * log Java writes from the same input (RewriteLog.java).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"
#include "tailbus/hist.h"
#include "tailbus/log.h"

#define MAX_LEVELS 10
#define HEADER_CAP 1024
#define LINE_SLACK (TB_LOG_TAG_MAX + 256) /* tag and three numbers */
#define OUT_COMMENT "Re-encoded by tailbus bench/java/recode"

struct output {
	int level;
	FILE *f;
	char path[4096];
};

struct buffers {
	uint8_t *inner, *frame;
	char *line;
	size_t inner_cap, frame_cap, line_cap;
};

static int reserve(struct buffers *b, const tb_hist *h)
{
	size_t inner = tb_v2_inner_bound(h), frame = tb_v2_frame_bound(h);
	size_t line = tb_base64_encoded_len(frame) + LINE_SLACK;
	if (inner <= b->inner_cap && frame <= b->frame_cap && line <= b->line_cap)
		return 0;
	free(b->inner);
	free(b->frame);
	free(b->line);
	b->inner = malloc(inner);
	b->frame = malloc(frame);
	b->line = malloc(line);
	b->inner_cap = inner, b->frame_cap = frame, b->line_cap = line;
	return b->inner && b->frame && b->line ? 0 : -ENOMEM;
}

/* One interval into every output. */
static int recode_entry(const tb_log_entry *e, double base, struct output *out, int nout,
			struct buffers *b)
{
	size_t inner_len, frame_len;
	int rc = reserve(b, &e->hist);
	if (rc == 0)
		rc = tb_v2_encode_inner(&e->hist, b->inner, b->inner_cap, &inner_len);
	for (int i = 0; i < nout && rc == 0; i++) {
		rc = tb_v2_compress(b->inner, inner_len, out[i].level, b->frame, b->frame_cap,
				    &frame_len);
		int n = rc < 0 ? rc
			       : tb_log_format_line_frame(b->line, b->line_cap, e->tag,
							  e->start_abs_sec - base, e->length_sec,
							  tb_hist_max(&e->hist), b->frame, frame_len);
		if (n < 0)
			rc = n;
		else if (fwrite(b->line, 1, (size_t)n, out[i].f) != (size_t)n)
			rc = -EIO;
	}
	return rc;
}

static int write_headers(double start, struct output *out, int nout)
{
	char header[HEADER_CAP];
	int n = tb_log_format_header(header, sizeof(header), OUT_COMMENT, start, start);
	for (int i = 0; i < nout && n >= 0; i++) {
		if (fputs(header, out[i].f) == EOF)
			return -EIO;
	}
	return n < 0 ? n : 0;
}

static int recode(const char *text, size_t len, long max_lines, struct output *out, int nout)
{
	tb_log_reader r;
	tb_log_entry e;
	struct buffers b = {0};
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, text, len);
	int rc = 0, got;
	long lines = 0;
	bool headers = false;
	while (rc == 0 && (max_lines < 0 || lines < max_lines) &&
	       (got = tb_log_reader_next(&r, &e)) != 0) {
		if (got < 0) {
			fprintf(stderr, "recode: %s\n", r.err);
			rc = got;
			break;
		}
		if (!headers) {
			rc = write_headers(r.start_time_sec, out, nout);
			headers = true;
		}
		if (rc == 0)
			rc = recode_entry(&e, r.start_time_sec, out, nout, &b);
		lines++;
	}
	tb_log_entry_free(&e);
	free(b.inner);
	free(b.frame);
	free(b.line);
	return rc;
}

int main(int argc, char **argv)
{
	struct output out[MAX_LEVELS] = {0};
	int nout = 0;
	long max_lines = -1;
	for (int i = 3; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "--lines") && i + 1 < argc) {
			max_lines = strtol(argv[++i], &end, 10);
			if (*end || max_lines < 0)
				goto usage;
			continue;
		}
		long level = strtol(argv[i], &end, 10);
		if (*end || end == argv[i] || level < 0 || level > 9 || nout == MAX_LEVELS)
			goto usage;
		out[nout].level = (int)level;
		snprintf(out[nout].path, sizeof(out[nout].path), "%s.z%ld.hlog", argv[2], level);
		nout++;
	}
	if (argc < 4 || nout == 0)
		goto usage;
	char *text;
	size_t len;
	int rc = tb_read_file(argv[1], &text, &len);
	if (rc < 0) {
		fprintf(stderr, "recode: cannot read %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	for (int i = 0; i < nout && rc == 0; i++) {
		if (!(out[i].f = fopen(out[i].path, "w")))
			rc = -errno;
	}
	if (rc == 0)
		rc = recode(text, len, max_lines, out, nout);
	for (int i = 0; i < nout; i++) {
		if (out[i].f && fclose(out[i].f) != 0 && rc == 0)
			rc = -EIO;
	}
	free(text);
	if (rc < 0)
		fprintf(stderr, "recode: %s: %s\n", argv[1], strerror(-rc));
	return rc < 0 ? 1 : 0;
usage:
	fprintf(stderr, "usage: recode IN.hlog OUT_PREFIX [--lines N] LEVEL...\n");
	return 2;
}
