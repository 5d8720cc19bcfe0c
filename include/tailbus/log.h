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
 * Input: tb_log_load gives that text from a file or stdin ("-"), inflating
 * gzip data found by its magic number (log_input.c).
 *
 * Reader: works over text in memory (a whole file, or a fuzzer's input). It
 * resolves relative and absolute timestamps the way the Java reader does, and
 * never stops at a bad line: it reports the line number and the field, skips
 * the line, and the next call reads on. Text may come in parts
 * (tb_log_reader_feed): tailbus/log_follow.h reads a log that is still
 * growing that way.
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

/* The suffix of a closed-loop tag: what `tailbus load --closed` appends to
 * the metric it records from the actual send. Coordinated-omission
 * correction may be applied to such a tag even in an open-loop log. */
#define TB_CLOSED_LOOP_SUFFIX ".closed"
/* True when tag ends in TB_CLOSED_LOOP_SUFFIX (log_header.c). */
bool tb_log_tag_is_closed_loop(const char *tag);

/* The zlib level of the logs tailbus writes: as Java's log writer, the
 * smallest lines. */
#define TB_LOG_ZLEVEL 9

/* ---- writer ---- */

/* True when tag is non-empty and has no ',', space, CR or LF. */
bool tb_log_tag_valid(const char *tag);
/* The header: comment line, version, StartTime, BaseTime, legend. `comment`
 * may be NULL; it must not contain ']' or a newline. Returns the length or a
 * negative errno (-ENOSPC, -EINVAL). */
int tb_log_format_header(char *buf, size_t cap, const char *comment, double start_time_sec,
			 double base_time_sec);
/* The same with `lines` after the comment line: whole comment lines, each
 * beginning with '#' and ending with a newline (what a log says of its data:
 * open-loop marks, sources, env lines); NULL or "" for none. -EINVAL when a
 * line does not begin with '#' or the last has no newline. */
int tb_log_format_header_lines(char *buf, size_t cap, const char *comment, const char *lines,
			       double start_time_sec, double base_time_sec);
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

/* The same from a payload already in base64 (a line rewritten from another
 * log, its payload untouched). max_field is the third field as written, in
 * the log's unit (the histogram's max / TB_LOG_MAX_UNIT_RATIO). `buf` must
 * hold tb_log_line_base64_bound(payload_len) bytes. Returns the length,
 * -ENOSPC, or -EINVAL for an invalid tag or a payload with a newline. */
size_t tb_log_line_base64_bound(size_t payload_len);
int tb_log_format_line_base64(char *buf, size_t cap, const char *tag, double start_rel_sec,
			      double length_sec, double max_field, const char *payload,
			      size_t payload_len);

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
/* Go on reading `text` as the lines that follow those read so far (a file
 * read as it grows, tailbus/log_follow.h): the clock, the line count and the
 * error state are kept; the old text is no longer looked at. `text` should
 * end at the end of a line. */
void tb_log_reader_feed(tb_log_reader *r, const char *text, size_t len);
/* 1: *e holds the next interval. 0: end of text. -EINVAL: line r->err_line is
 * malformed (r->err says which field); it was skipped, call again to go on.
 * -ENOTSUP: the line's payload encoding is unsupported (also skipped).
 * -ENOMEM: out of memory. */
int tb_log_reader_next(tb_log_reader *r, tb_log_entry *e);
void tb_log_entry_free(tb_log_entry *e);

/* Read a whole file into a malloc'd NUL-terminated buffer. 0 or -errno. */
int tb_read_file(const char *path, char **text, size_t *len);

/* Provenance: which input file a tag of a merged log came from, one comment
 * line per tag and file, before the legend:
 *     #[tailbus: source: tag=<tag> file=<path>]   (untagged: "untagged file=")
 * Informative only: no reader acts on it. */
#define TB_LOG_SOURCE_PREFIX "#[tailbus: source: "
/* The source line of `tag` ("" for untagged) read from `path`, newline
 * included, at most cap - 1 bytes: a path too long for it keeps its end,
 * after "...", and its control characters and ']' print as '?'. Returns the
 * length, -ENOSPC (cap too small even for the tag), or -EINVAL. */
int tb_log_format_source(char *buf, size_t cap, const char *tag, const char *path);

/* ---- input: files, stdin, gzip (log_input.c) ---- */

/* The path that means standard input. */
#define TB_LOG_STDIN "-"
/* A bound on a gzip'd log's inflated text for the tools: a few minutes of
 * per-millisecond intervals of hundreds of tags stay far below it, and a
 * gzip bomb stops there instead of at the end of memory. */
#define TB_LOG_INFLATED_MAX ((size_t)16 << 30)

/* True when the bytes begin with gzip's magic number (RFC 1952). */
bool tb_log_is_gzip(const void *data, size_t len);
/* Inflate gzip data (one or more members, concatenated) into a malloc'd
 * NUL-terminated text of at most `max` bytes. 0; -EINVAL (no gzip magic),
 * -EBADMSG (corrupt or cut short), -EFBIG (more than max), -ENOMEM. */
int tb_log_gunzip(const void *in, size_t n, size_t max, char **text, size_t *len);
/* The text of a log: the whole file at `path`, or standard input for
 * TB_LOG_STDIN, inflated when it is gzip data (by its magic number, not its
 * name; at most `max` bytes inflated). The text is malloc'd and
 * NUL-terminated. 0, or a negative errno: the open/read errors, -EISDIR, and
 * those of tb_log_gunzip. */
int tb_log_load(const char *path, size_t max, char **text, size_t *len);
/* What a tb_log_load error means, as a phrase for "cannot read FILE: ...". */
const char *tb_log_load_strerror(int rc);

/* ---- open-loop marks ---- */

/* The per-tag form of the open-loop mark, for a log whose tags differ
 * (replay --output-log merging a tailbusd log with another tool's):
 *     #[tailbus: open-loop tag=<tag>]      or      #[tailbus: open-loop untagged]
 * one comment line per open-loop tag, before the legend. They begin like
 * TB_OPEN_LOOP_MARK, so a reader that knows only the whole-log mark takes
 * the log as open-loop throughout: it refuses too much, never too little.
 * Java and C readers skip them as comments. */
#define TB_OPEN_LOOP_PREFIX "#[tailbus: open-loop"
#define TB_OPEN_LOOP_TAG_PREFIX "#[tailbus: open-loop tag="
#define TB_OPEN_LOOP_UNTAGGED "#[tailbus: open-loop untagged]"

/* The per-tag mark of `tag` ("" for untagged) and a newline into buf.
 * Returns the length, -ENOSPC, or -EINVAL for an invalid tag. */
int tb_log_format_open_loop_tag(char *buf, size_t cap, const char *tag);
/* True when the log marks `tag` ("" for untagged) open-loop: by the
 * whole-log mark (any comment line beginning with TB_OPEN_LOOP_PREFIX that
 * is not a per-tag mark) or by the tag's own per-tag mark. Comment lines
 * anywhere in the text count (a concatenated log keeps each part's header). */
bool tb_log_open_loop(const char *text, size_t len, const char *tag);

/* Every open-loop mark of a log, read in one pass (log_header.c): for a
 * reader asking about many tags, as tb_log_open_loop answers each. */
typedef struct tb_log_mark {
	const char *tag; /* a per-tag mark's tag, in the log's text */
	size_t len;
} tb_log_mark;
typedef struct tb_log_open_loop_marks {
	bool whole;        /* the whole-log mark */
	bool untagged;     /* the untagged lines' mark */
	tb_log_mark *tags; /* the per-tag marks (sorted; private order) */
	size_t ntags;
} tb_log_open_loop_marks;
/* 0, or -ENOMEM (*m then empty). */
int tb_log_open_loop_scan(const char *text, size_t len, tb_log_open_loop_marks *m);
/* What tb_log_open_loop(text, len, tag) says, from the marks of text. */
bool tb_log_open_loop_marked(const tb_log_open_loop_marks *m, const char *tag);
void tb_log_open_loop_marks_free(tb_log_open_loop_marks *m);

/* ---- header: where the log was measured (log_header.c) ---- */

/* One "#[env key=value]" line of a log's header (tailbus/env.h), pointing
 * into the log's text: the whole line (no newline), its key and its value. */
typedef struct tb_log_env_field {
	const char *line, *key, *value;
	size_t line_len, key_len, value_len;
} tb_log_env_field;

/* The env lines of a log's header, one per call: start with *pos = 0;
 * returns 1 with *f filled, or 0 when the header has no more. */
int tb_log_env_next(const char *text, size_t len, size_t *pos, tb_log_env_field *f);
/* "key=value key=value ..." of the env lines whose key is one of `keys`,
 * in the log's order, into out (at most cap - 1 bytes; an item that does
 * not fit is left out). Returns its length, 0 when there are none. */
size_t tb_log_env_summary(const char *text, size_t len, const char *const *keys, size_t nkeys,
			  char *out, size_t cap);
/* True when two logs have the same env lines (both none included). */
bool tb_log_env_same(const char *a, size_t alen, const char *b, size_t blen);

#ifdef __cplusplus
}
#endif
#endif
