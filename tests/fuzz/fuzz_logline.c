/* fuzz_logline.c - libFuzzer target for the interval log reader.
 *
 * The input is the text of a log (not NUL-terminated: the reader works on a
 * length, and AddressSanitizer sees any read past it), or gzip data of one:
 * an input that begins with gzip's magic number goes through tb_log_gunzip
 * first, as tb_log_load takes every file `tailbus replay` reads, and the
 * text it gives is read instead. The target reads the text
 * the way `tailbus replay` does: tb_log_reader_next() until it returns 0,
 * going on after every rejected line, with one entry reused throughout and
 * freed at the end.
 *
 * What must hold on every call:
 *   - gzip data inflates to a NUL-terminated text of at most FUZZ_INFLATED_MAX
 *     bytes, or is refused with -EBADMSG or -EFBIG (never -ENOMEM, nor a
 *     partial text);
 *   - tb_log_open_loop answers for the first tag read, and for the untagged
 *     lines, without reading past the text;
 *   - the result is 1 (an interval), 0 (end) or -EINVAL / -ENOTSUP (a line
 *     skipped), with r->err naming that line; never -ENOMEM, which makes
 *     `tailbus replay` stop reading (see FUZZ_ENOMEM_IS_A_BUG);
 *   - every call consumes at least one line, so the read ends after at most
 *     one call per line plus the final 0;
 *   - an interval's tag is a NUL-terminated string without ',' or ' ', its
 *     line number is the reader's current line, and its histogram keeps
 *     hist.h's invariants (fuzz_check.h): total == sum of counts, and so on;
 *   - merging every interval as `tailbus replay` does by default (into a
 *     histogram laid out like the first, with tb_hist_add_growing()) succeeds
 *     and gives a histogram that keeps the same invariants, whose total is
 *     the sum of the intervals' totals; an interval that would take that sum
 *     past INT64_MAX must be refused with -EOVERFLOW, the merge unchanged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "tailbus/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A gzip input may inflate to at most this much text: enough for logs of
 * thousands of lines, small enough to keep each run fast. */
#define FUZZ_INFLATED_MAX (1u << 20)

static size_t count_lines(const uint8_t *data, size_t size)
{
	size_t n = 1;
	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

static void check_entry(const tb_log_reader *r, const tb_log_entry *e)
{
	size_t tag_len = strnlen(e->tag, sizeof(e->tag));
	FUZZ_CHECK(tag_len < sizeof(e->tag), "tag is not NUL-terminated");
	FUZZ_CHECK(strpbrk(e->tag, ", ") == NULL, "tag '%s' holds a separator", e->tag);
	FUZZ_CHECK(e->line == r->line, "entry line %zu, reader at line %zu", e->line, r->line);
	FUZZ_CHECK(e->length_sec >= 0, "interval length %g", e->length_sec);
	fuzz_check_hist(&e->hist);
}

static void check_rejection(const tb_log_reader *r, int rc, size_t bad_before)
{
	FUZZ_CHECK(rc != -ENOMEM, "line %zu: out of memory: %s", r->line, FUZZ_ENOMEM_IS_A_BUG);
	FUZZ_CHECK(rc == -EINVAL || rc == -ENOTSUP, "reader returned %d", rc);
	FUZZ_CHECK(r->err_line == r->line, "error names line %zu, reader at line %zu",
		   r->err_line, r->line);
	FUZZ_CHECK(strnlen(r->err, sizeof(r->err)) < sizeof(r->err), "error is not NUL-terminated");
	FUZZ_CHECK(r->err[0] != '\0', "line %zu rejected without a reason", r->line);
	FUZZ_CHECK(r->bad_lines == bad_before + 1, "bad_lines went from %zu to %zu", bad_before,
		   r->bad_lines);
}

/* The merge of the intervals read so far, as tailbus replay keeps it (lib/log_merge.c). */
struct merge {
	tb_hist h;
	int64_t expected_total;
	bool started;
};

static void merge_entry(struct merge *m, const tb_log_entry *e)
{
	if (!m->started) {
		int rc = tb_hist_init_like(&m->h, &e->hist);
		FUZZ_CHECK(rc == 0, "tb_hist_init_like returned %d", rc);
		m->started = true;
	}
	int64_t want;
	bool overflow = __builtin_add_overflow(m->expected_total, e->hist.total, &want);
	/* merge first, so a sanitizer build reports the library's own overflow */
	int rc = tb_hist_add_growing(&m->h, &e->hist);
	if (overflow) {
		/* the only right answer is a refusal that leaves the counts alone */
		FUZZ_CHECK(rc == -EOVERFLOW, "line %zu: the merged total passes INT64_MAX, and "
			   "tb_hist_add_growing returned %d", e->line, rc);
		return;
	}
	FUZZ_CHECK(rc == 0, "line %zu: tb_hist_add_growing returned %d", e->line, rc);
	m->expected_total = want;
}

static void read_text(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!tb_log_is_gzip(data, size)) {
		read_text(data, size);
		return 0;
	}
	char *text = NULL;
	size_t len = 0;
	int rc = tb_log_gunzip(data, size, FUZZ_INFLATED_MAX, &text, &len);
	FUZZ_CHECK(rc != -ENOMEM, "gunzip: out of memory: %s", FUZZ_ENOMEM_IS_A_BUG);
	FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -EFBIG, "gunzip returned %d", rc);
	if (rc < 0)
		return 0;
	FUZZ_CHECK(len <= FUZZ_INFLATED_MAX, "gunzip gave %zu bytes, more than its bound", len);
	FUZZ_CHECK(text[len] == '\0', "gunzip's text is not NUL-terminated");
	/* a copy of exactly len bytes, so a read past the text is seen */
	uint8_t *copy = malloc(len ? len : 1);
	FUZZ_CHECK(copy != NULL, "out of memory copying %zu bytes", len);
	memcpy(copy, text, len);
	free(text);
	read_text(copy, len);
	free(copy);
	return 0;
}

static void read_text(const uint8_t *data, size_t size)
{
	tb_log_reader r;
	tb_log_entry e;
	struct merge m = {0};
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, (const char *)data, size);

	bool first_tag_seen = false;
	(void)tb_log_open_loop((const char *)data, size, "");
	size_t max_calls = count_lines(data, size) + 1;
	size_t calls = 0;
	for (;;) {
		size_t line_before = r.line, bad_before = r.bad_lines;
		int rc = tb_log_reader_next(&r, &e);
		calls++;
		FUZZ_CHECK(calls <= max_calls, "%zu calls for %zu lines", calls, max_calls - 1);
		if (rc == 0)
			break;
		FUZZ_CHECK(r.line > line_before, "call %zu returned %d without reading a line", calls,
			   rc);
		if (rc == 1) {
			check_entry(&r, &e);
			merge_entry(&m, &e);
			if (!first_tag_seen) /* one scan per input: it reads the whole text */
				(void)tb_log_open_loop((const char *)data, size, e.tag);
			first_tag_seen = true;
		} else {
			check_rejection(&r, rc, bad_before);
		}
	}
	FUZZ_CHECK(r.pos == r.len, "read ended at %zu of %zu bytes", r.pos, r.len);
	if (m.started) {
		fuzz_check_hist(&m.h);
		FUZZ_CHECK(m.h.total == m.expected_total, "merged total %lld, intervals' totals %lld",
			   (long long)m.h.total, (long long)m.expected_total);
		tb_hist_free(&m.h);
	}
	tb_log_entry_free(&e);
}
