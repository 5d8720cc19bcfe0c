/* log_header.c - what a log's header says of where it was measured.
 *
 * tailbusd writes the machine and build a log was measured on as
 * "#[env key=value]" lines in the header (tailbus/env.h writes them;
 * tb_env_next_header_line finds them). This file reads them back for the
 * tools: one key and value at a time, a one-line "key=value ..." summary of
 * chosen keys, and whether two logs were measured alike.
 *
 * Invariants: works over text in memory, never allocates, never fails; the
 * pointers it returns point into the caller's text. Values are the log's
 * bytes, unescaped: a caller printing them to a terminal escapes them.
 */
#include "tailbus/log.h"

#include <stdio.h>
#include <string.h>

#include "tailbus/env.h"

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
	bool more_a, more_b;
	while ((more_a = tb_log_env_next(a, alen, &apos, &fa)) &
	       (more_b = tb_log_env_next(b, blen, &bpos, &fb))) {
		if (fa.line_len != fb.line_len || memcmp(fa.line, fb.line, fa.line_len))
			return false;
	}
	return !more_a && !more_b;
}
