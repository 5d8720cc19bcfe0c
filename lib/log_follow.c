/* log_follow.c - an interval log followed as it grows (see tailbus/log_follow.h).
 *
 * A poll preads what lies past `offset` (the first byte not taken: the end
 * of the file, or the start of a torn line) in chunks, and hands everything
 * up to the last end of line to the log reader as the next part of its text
 * (tb_log_reader_feed), so the StartTime and BaseTime lines, the legend, tags
 * and line numbers are read exactly as tb_log_reader reads a whole file. The
 * bytes after the last end of line wait in the buffer for the next chunk, or
 * in the file for the next poll.
 *
 * The reader runs with defer_payload: a data line is parsed and its payload
 * located but not decoded. Each tag keeps a ring of its newest `keep` lines:
 * the parsed fields and a copy of the payload text, decoded on demand.
 *
 * Rotation is noticed by the path naming another inode (stat against the
 * open descriptor's), truncation by the file being shorter than `offset`;
 * either way the reader and every tag start afresh. An overlong line
 * (TB_LOG_FOLLOW_LINE_MAX bytes with no end of line) is counted bad when its
 * first bytes are seen, and its remaining bytes are dropped up to its end.
 */
#include "tailbus/log_follow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tailbus/codec.h"
#include "tailbus/grow.h"

#define READ_CHUNK ((size_t)1 << 20)

/* One kept interval line: the reader's fields, the payload's text. */
struct kept {
	char *payload; /* NULL: an empty place in the ring */
	size_t payload_len;
	size_t line;
	double start_field, start_abs_sec, offset_sec, length_sec, max_field;
	bool bad; /* the payload did not decode: counted once, then left out */
};

struct tag {
	char name[TB_LOG_TAG_MAX];
	struct kept *lines; /* `keep` of them, a ring, the newest at `newest` */
	uint32_t newest, count;
};

struct tb_log_follow {
	char *path;
	uint32_t keep;
	int fd;
	dev_t dev;
	ino_t ino;
	off_t offset;  /* first byte not taken yet: EOF, or the start of a torn line */
	bool skipping; /* inside an overlong line: drop bytes up to its end */
	char *buf;
	size_t buf_cap;
	tb_log_reader reader; /* its clock and line count carry from poll to poll */
	tb_log_entry entry;   /* the reader's, for the line being taken */
	struct tag *tags;
	size_t ntags;
	size_t intervals, bad_lines;
	char last_error[TB_LOG_ERR_MAX + 32];
};

static void free_tags(tb_log_follow *f)
{
	for (size_t t = 0; t < f->ntags; t++) {
		for (uint32_t k = 0; k < f->keep; k++)
			free(f->tags[t].lines[k].payload);
		free(f->tags[t].lines);
	}
	free(f->tags);
	f->tags = NULL;
	f->ntags = 0;
}

/* Read the file again from its start. */
static void start_over(tb_log_follow *f)
{
	free_tags(f);
	f->offset = 0;
	f->skipping = false;
	f->intervals = 0;
	tb_log_reader_init(&f->reader, NULL, 0);
	f->reader.defer_payload = true;
}

/* (Re)open f->path: the file it names now, read from its start. */
static int reopen(tb_log_follow *f)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	int err = fstat(fd, &st) < 0 ? -errno
		  : S_ISDIR(st.st_mode) ? -EISDIR
		  : !S_ISREG(st.st_mode) ? -EINVAL
					: 0;
	if (err < 0) {
		close(fd);
		return err;
	}
	if (f->fd >= 0)
		close(f->fd);
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	start_over(f);
	return 0;
}

int tb_log_follow_open(tb_log_follow **out, const char *path, uint32_t keep)
{
	if (keep == 0)
		return -EINVAL;
	tb_log_follow *f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(path))) {
		free(f);
		return -ENOMEM;
	}
	f->keep = keep;
	f->fd = -1;
	int rc = reopen(f);
	if (rc < 0) {
		tb_log_follow_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

void tb_log_follow_close(tb_log_follow *f)
{
	if (!f)
		return;
	free_tags(f);
	if (f->fd >= 0)
		close(f->fd);
	tb_log_entry_free(&f->entry);
	free(f->buf);
	free(f->path);
	free(f);
}

static void count_bad(tb_log_follow *f, size_t line, const char *why)
{
	f->bad_lines++;
	snprintf(f->last_error, sizeof(f->last_error), "line %zu: %s", line, why);
}

static struct tag *find_tag(tb_log_follow *f, const char *name)
{
	for (size_t t = 0; t < f->ntags; t++) {
		if (!strcmp(f->tags[t].name, name))
			return &f->tags[t];
	}
	struct tag *tags = realloc(f->tags, (f->ntags + 1) * sizeof(*tags));
	if (!tags)
		return NULL;
	f->tags = tags;
	struct tag *t = &tags[f->ntags];
	memset(t, 0, sizeof(*t));
	if (!(t->lines = calloc(f->keep, sizeof(*t->lines))))
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	f->ntags++;
	return t;
}

/* Keep the reader's entry as its tag's newest interval. */
static int keep_entry(tb_log_follow *f, const tb_log_entry *e)
{
	struct tag *t = find_tag(f, e->tag);
	char *payload = malloc(e->payload_len + 1);
	if (!t || !payload) {
		free(payload);
		return -ENOMEM;
	}
	memcpy(payload, e->payload, e->payload_len);
	payload[e->payload_len] = '\0';
	uint32_t k = t->count ? (t->newest + 1) % f->keep : 0;
	free(t->lines[k].payload);
	t->lines[k] = (struct kept){payload,         e->payload_len, e->line,       e->start_field,
				    e->start_abs_sec, e->offset_sec, e->length_sec, e->max_field,
				    false};
	t->newest = k;
	if (t->count < f->keep)
		t->count++;
	f->intervals++;
	return 0;
}

/* Take every complete line of buf[0..n); returns the bytes taken. */
static ssize_t take_lines(tb_log_follow *f, const char *buf, size_t n)
{
	const char *last_nl = memrchr(buf, '\n', n);
	if (!last_nl)
		return 0;
	size_t pos = 0, end = (size_t)(last_nl - buf) + 1;
	if (f->skipping) { /* the end of an overlong line, already counted */
		pos = (size_t)((const char *)memchr(buf, '\n', n) - buf) + 1;
		f->reader.line++;
		f->skipping = false;
	}
	tb_log_reader_feed(&f->reader, buf + pos, end - pos);
	for (;;) {
		int rc = tb_log_reader_next(&f->reader, &f->entry);
		if (rc == 0)
			break;
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) { /* the reader's "line N: why", N counted over the parts */
			const char *why = strstr(f->reader.err, ": ");
			count_bad(f, f->reader.err_line, why ? why + 2 : f->reader.err);
		} else if ((rc = keep_entry(f, &f->entry)) < 0)
			return rc;
	}
	return (ssize_t)end;
}

/* A line longer than TB_LOG_FOLLOW_LINE_MAX: count it bad, drop it up to its end. */
static void skip_overlong(tb_log_follow *f, size_t *have)
{
	count_bad(f, f->reader.line + 1, "longer than any interval line; skipped");
	f->offset += (off_t)*have;
	*have = 0;
	f->skipping = true;
}

int tb_log_follow_poll(tb_log_follow *f)
{
	struct stat now, st;
	if (stat(f->path, &now) == 0 && (now.st_ino != f->ino || now.st_dev != f->dev)) {
		int rc = reopen(f);
		if (rc < 0)
			return rc;
	}
	if (fstat(f->fd, &st) == 0 && st.st_size < f->offset)
		start_over(f);
	size_t have = 0;
	for (;;) {
		if (tb_grow((void **)&f->buf, &f->buf_cap, have + READ_CHUNK, READ_CHUNK) < 0)
			return -ENOMEM;
		ssize_t got = pread(f->fd, f->buf + have, READ_CHUNK, f->offset + (off_t)have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return 0; /* a torn last line stays unread until it is complete */
		have += (size_t)got;
		ssize_t taken = take_lines(f, f->buf, have);
		if (taken < 0)
			return (int)taken;
		f->offset += taken;
		have -= (size_t)taken;
		memmove(f->buf, f->buf + taken, have);
		if (have >= TB_LOG_FOLLOW_LINE_MAX)
			skip_overlong(f, &have);
	}
}

size_t tb_log_follow_tags(const tb_log_follow *f)
{
	return f->ntags;
}

const char *tb_log_follow_tag(const tb_log_follow *f, size_t tag)
{
	return tag < f->ntags ? f->tags[tag].name : NULL;
}

uint32_t tb_log_follow_count(const tb_log_follow *f, size_t tag)
{
	return tag < f->ntags ? f->tags[tag].count : 0;
}

int tb_log_follow_read(tb_log_follow *f, size_t tag, uint32_t age, tb_log_entry *e)
{
	if (tag >= f->ntags || age >= f->tags[tag].count)
		return -ERANGE;
	struct tag *t = &f->tags[tag];
	struct kept *l = &t->lines[(t->newest + f->keep - age) % f->keep];
	if (l->bad)
		return -EINVAL;
	const char *why = "unknown";
	int rc = tb_v2_decode_base64(l->payload, l->payload_len, &e->hist, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		char what[TB_LOG_ERR_MAX];
		snprintf(what, sizeof(what), "histogram payload: %s", why);
		count_bad(f, l->line, what);
		l->bad = true;
		return -EINVAL;
	}
	snprintf(e->tag, sizeof(e->tag), "%s", t->name);
	e->line = l->line;
	e->start_field = l->start_field;
	e->start_abs_sec = l->start_abs_sec;
	e->offset_sec = l->offset_sec;
	e->length_sec = l->length_sec;
	e->max_field = l->max_field;
	e->payload = l->payload;
	e->payload_len = l->payload_len;
	return 0;
}

void tb_log_follow_stats_get(const tb_log_follow *f, tb_log_follow_stats *out)
{
	out->intervals = f->intervals;
	out->bad_lines = f->bad_lines;
	out->last_error = f->bad_lines ? f->last_error : NULL;
}
