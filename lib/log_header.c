/* log_header.c - what a log's comment lines say of its data: where it was
 * measured, and whether it is open-loop.
 *
 * tailbusd writes the machine and build a log was measured on as
 * "#[env key=value]" lines in the header (tailbus/env.h writes them;
 * tb_env_next_header_line finds them). This file reads them back for the
 * tools: one key and value at a time, a one-line "key=value ..." summary of
 * chosen keys, and whether two logs were measured alike.
 *
 * The open-loop marks (log.h) are comment lines anywhere in the text (a
 * concatenated log keeps each part's header): the whole-log mark, and the
 * per-tag marks of a merged log. mark_of classifies one line, for the
 * question about one tag (tb_log_open_loop) and for the set of every mark
 * read at once (tb_log_open_loop_scan), which a reader asking about many
 * tags keeps instead of reading the text again for each. A tag ending in
 * TB_CLOSED_LOOP_SUFFIX is one recorded closed-loop
 * (tb_log_tag_is_closed_loop).
 *
 * Invariants: works over text in memory; only the set of marks allocates;
 * the pointers it returns point into the caller's text. Values are the log's
 * bytes, unescaped: a caller printing them to a terminal escapes them.
 */
#include "tailbus/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/env.h"
#include "tailbus/grow.h"

int tb_log_env_next(const char *text, size_t len, size_t *pos, tb_log_env_field *f)
{
	size_t prefix = strlen(TB_ENV_HEADER_PREFIX), n;
	const char *line;
	if (!tb_env_next_header_line(text, len, pos, &line, &n))
		return 0;
	/* "#[env key=value]": key from the prefix to '=', value to ']' */
	f->line = line;
	f->line_len = n;
	f->key = line + prefix;
	const char *eq = memchr(f->key, '=', n - prefix);
	f->key_len = (size_t)(eq - f->key);
	f->value = eq + 1;
	f->value_len = (size_t)(line + n - 1 - f->value);
	return 1;
}

size_t tb_log_env_summary(const char *text, size_t len, const char *const *keys, size_t nkeys,
			  char *out, size_t cap)
{
	size_t pos = 0, o = 0;
	tb_log_env_field f;
	out[0] = '\0';
	while (tb_log_env_next(text, len, &pos, &f)) {
		for (size_t k = 0; k < nkeys; k++) {
			if (strlen(keys[k]) != f.key_len || memcmp(f.key, keys[k], f.key_len))
				continue;
			int n = snprintf(out + o, cap - o, "%s%.*s=%.*s", o ? " " : "", (int)f.key_len,
					 f.key, (int)f.value_len, f.value);
			if (n > 0 && (size_t)n < cap - o)
				o += (size_t)n;
			else
				out[o] = '\0'; /* what did fit of it goes */
		}
	}
	return o;
}

bool tb_log_env_same(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t apos = 0, bpos = 0;
	tb_log_env_field fa, fb;
	for (;;) {
		bool more_a = tb_log_env_next(a, alen, &apos, &fa);
		bool more_b = tb_log_env_next(b, blen, &bpos, &fb);
		if (!more_a || !more_b)
			return more_a == more_b;
		if (fa.line_len != fb.line_len || memcmp(fa.line, fb.line, fa.line_len))
			return false;
	}
}

/* ---- open-loop marks ---- */

enum mark { NOT_A_MARK, MARK_WHOLE, MARK_UNTAGGED, MARK_TAG };

static bool has_prefix(const char *p, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(p, prefix, k);
}

/* The next comment line at or after *pos, without its trailing blanks and
 * CR (as the reader takes lines); false at the end of the text. */
static bool next_comment(const char *text, size_t len, size_t *pos, const char **p, size_t *n)
{
	while (*pos < len) {
		const char *line = text + *pos, *nl = memchr(line, '\n', len - *pos);
		size_t k = nl ? (size_t)(nl - line) : len - *pos;
		*pos += k + (nl ? 1 : 0);
		while (k && (line[k - 1] == ' ' || line[k - 1] == '\t' || line[k - 1] == '\r'))
			k--;
		if (k && line[0] == '#') {
			*p = line;
			*n = k;
			return true;
		}
	}
	return false;
}

/* What comment line p[0..n) marks open-loop; a per-tag mark's tag (never
 * empty) in *tag and *tag_len. A line that begins like a mark but has no
 * form known here counts as the whole-log mark: refusing too much is safe. */
static enum mark mark_of(const char *p, size_t n, const char **tag, size_t *tag_len)
{
	size_t k = strlen(TB_OPEN_LOOP_TAG_PREFIX);
	if (!has_prefix(p, n, TB_OPEN_LOOP_PREFIX))
		return NOT_A_MARK;
	if (n == strlen(TB_OPEN_LOOP_UNTAGGED) && has_prefix(p, n, TB_OPEN_LOOP_UNTAGGED))
		return MARK_UNTAGGED;
	if (!has_prefix(p, n, TB_OPEN_LOOP_TAG_PREFIX))
		return MARK_WHOLE;
	if (n < k + 2 || p[n - 1] != ']')
		return NOT_A_MARK;
	*tag = p + k;
	*tag_len = n - k - 1;
	return MARK_TAG;
}

bool tb_log_open_loop(const char *text, size_t len, const char *tag)
{
	size_t pos = 0, n, tag_len = 0, want = strlen(tag);
	const char *p, *marked = NULL;
	while (next_comment(text, len, &pos, &p, &n)) {
		switch (mark_of(p, n, &marked, &tag_len)) {
		case MARK_WHOLE: return true;
		case MARK_UNTAGGED: if (!want) return true; break;
		case MARK_TAG: if (tag_len == want && !memcmp(marked, tag, want)) return true; break;
		case NOT_A_MARK: break;
		}
	}
	return false;
}

static int by_tag(const void *a, const void *b)
{
	const tb_log_mark *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->tag, y->tag, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

int tb_log_open_loop_scan(const char *text, size_t len, tb_log_open_loop_marks *m)
{
	size_t pos = 0, n, cap = 0;
	const char *p;
	tb_log_mark mark;
	memset(m, 0, sizeof(*m));
	while (next_comment(text, len, &pos, &p, &n)) {
		switch (mark_of(p, n, &mark.tag, &mark.len)) {
		case MARK_WHOLE: m->whole = true; break;
		case MARK_UNTAGGED: m->untagged = true; break;
		case NOT_A_MARK: break;
		case MARK_TAG:
			if (tb_grow_n((void **)&m->tags, &cap, m->ntags + 1, 16,
				      sizeof(*m->tags)) < 0) {
				tb_log_open_loop_marks_free(m);
				return -ENOMEM;
			}
			m->tags[m->ntags++] = mark;
			break;
		}
	}
	if (m->ntags)
		qsort(m->tags, m->ntags, sizeof(*m->tags), by_tag);
	return 0;
}

bool tb_log_tag_is_closed_loop(const char *tag)
{
	size_t n = strlen(tag), k = strlen(TB_CLOSED_LOOP_SUFFIX);
	return n >= k && !strcmp(tag + n - k, TB_CLOSED_LOOP_SUFFIX);
}

bool tb_log_open_loop_marked(const tb_log_open_loop_marks *m, const char *tag)
{
	tb_log_mark key = {tag, strlen(tag)};
	if (m->whole || (!key.len && m->untagged))
		return true;
	return key.len && m->ntags &&
	       bsearch(&key, m->tags, m->ntags, sizeof(*m->tags), by_tag) != NULL;
}

void tb_log_open_loop_marks_free(tb_log_open_loop_marks *m)
{
	free(m->tags);
	memset(m, 0, sizeof(*m));
}
