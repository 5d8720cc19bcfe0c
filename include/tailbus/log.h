/* tailbus/log.h - HdrHistogram interval logs, format version 1.3.
 *
 * A log is a short '#' header (free text, format version, StartTime,
 * BaseTime), the CSV legend, then one line per interval histogram:
 *     [Tag=<tag>,]<start - base>,<length>,<max / 1e6>,<base64 V2 payload>
 * Field 2 is the interval length, not its end. docs/formats.md,
 * Interval log, is the specification.
 *
 * Writer: pure formatting into caller buffers, so the collector can hand the
 * bytes to io_uring; a small stdio wrapper serves the tools.
 *
 * Reader: works over text in memory (a whole file, or a fuzzer's input). It
 * resolves relative and absolute timestamps the way the Java reader does, and
 * never stops at a bad line: it reports the line number and the field, skips
 * the line, and the next call reads on.
 */
#ifndef TAILBUS_LOG_H
#define TAILBUS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_LOG_FORMAT_VERSION "1.3"
/* Java's reader treats a first timestamp more than a year before StartTime as
 * relative to it when no BaseTime line is present. */
#define TB_LOG_RELATIVE_THRESHOLD_SEC (365.0 * 24 * 3600)
/* Interval_Max is written in milliseconds of a nanosecond log. */
#define TB_LOG_MAX_UNIT_RATIO 1e6
#define TB_LOG_TAG_MAX 256
#define TB_LOG_ERR_MAX 256

/* A header line marking a log whose latencies are measured from the
 * intended time (every tailbusd log). Coordinated-omission correction must
 * not be applied to such data. */
#define TB_OPEN_LOOP_MARK "#[tailbus: open-loop: latencies are measured from the intended time]"

/* ---- writer ---- */

/* True when tag is non-empty and has no ',', space, CR or LF. */
bool tb_log_tag_valid(const char *tag);
/* The header: comment line, version, StartTime, BaseTime, legend. `comment`
 * may be NULL; it must not contain ']' or a newline. Returns the length or a
 * negative errno (-ENOSPC, -EINVAL). */
int tb_log_format_header(char *buf, size_t cap, const char *comment, double start_time_sec,
			 double base_time_sec);
/* One data line. tag NULL or "" for an untagged line. `scratch` must hold
 * tb_v2_inner_bound(h) + tb_v2_frame_bound(h) bytes; `buf` at least
 * tb_log_line_bound(h). Returns the length or a negative errno. */
size_t tb_log_line_bound(const tb_hist *h);
int tb_log_format_line(char *buf, size_t cap, const char *tag, double start_rel_sec,
		       double length_sec, const tb_hist *h, int zlevel, uint8_t *scratch,
		       size_t scratch_cap);

/* The same from an already compressed frame (tb_v2_compress), for a caller
 * that also keeps the frame (the collector's live area). */
int tb_log_format_line_frame(char *buf, size_t cap, const char *tag, double start_rel_sec,
			     double length_sec, int64_t max_value, const uint8_t *frame,
			     size_t frame_len);

/* stdio convenience for the tools. */
typedef struct tb_log_writer {
	FILE *f;
	double base_time_sec;
	int zlevel;
	char *line;
	size_t line_cap;
	uint8_t *scratch;
	size_t scratch_cap;
} tb_log_writer;

int tb_log_writer_open(tb_log_writer *w, FILE *f, const char *comment, double start_time_sec,
		       double base_time_sec, int zlevel);
/* start_abs_sec: absolute start time; written relative to the base time. */
int tb_log_writer_append(tb_log_writer *w, const char *tag, double start_abs_sec,
			 double length_sec, const tb_hist *h);
void tb_log_writer_close(tb_log_writer *w); /* frees buffers; does not fclose */

/* ---- reader ---- */

typedef struct tb_log_entry {
	char tag[TB_LOG_TAG_MAX]; /* "" when untagged */
	size_t line;              /* 1-based line number */
	double start_field;       /* as written */
	double start_abs_sec;     /* absolute seconds since the epoch */
	double offset_sec;        /* seconds since the log's StartTime */
	double length_sec;
	double max_field;
	tb_hist hist; /* decoded; owned by the entry, reused between calls */
	const char *payload; /* the base64 field, inside the reader's text */
	size_t payload_len;
} tb_log_entry;

typedef struct tb_log_reader {
	const char *text;
	size_t len;
	size_t pos;
	size_t line;
	double start_time_sec;
	double base_time_sec;
	bool have_start;
	bool have_base;
	/* error of the last rejected line */
	size_t err_line;
	char err[TB_LOG_ERR_MAX];
	size_t bad_lines;
	/* Set by the caller after init: leave each payload to the caller
	 * (e->hist is then not decoded; e->payload is), who decodes only the
	 * lines it uses and must vet the others (tb_v2_check_base64). */
	bool defer_payload;
} tb_log_reader;

void tb_log_reader_init(tb_log_reader *r, const char *text, size_t len);
/* 1: *e holds the next interval. 0: end of text. -EINVAL: line r->err_line is
 * malformed (r->err says which field); it was skipped, call again to go on.
 * -ENOTSUP: the line's payload encoding is unsupported (also skipped).
 * -ENOMEM: out of memory. */
int tb_log_reader_next(tb_log_reader *r, tb_log_entry *e);
void tb_log_entry_free(tb_log_entry *e);

/* Read a whole file into a malloc'd NUL-terminated buffer. 0 or -errno. */
int tb_read_file(const char *path, char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
