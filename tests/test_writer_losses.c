/* test_writer_losses.c - the writer's notes of lost intervals
 * (collector/writer_losses.c), driven through its internal calls so that
 * an order of completions the backends leave to chance is played out on
 * purpose: a loss that comes while a file's preamble is in flight.
 *
 * No file is written: the writer is a bare struct whose files are marked
 * open, and each step is the call a backend makes when a write finishes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "writer_impl.h"

#define S 1000000000LL

static tb_writer *bare_writer(void)
{
	tb_writer *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	for (int i = 0; i < FILE_COUNT; i++) {
		w->files[i].fd = 1000 + i; /* open, as far as the notes go */
		w->files[i].pre = malloc(PREAMBLE_CAP);
		assert_non_null(w->files[i].pre);
	}
	return w;
}

static void free_writer(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++)
		free(w->files[i].pre);
	free(w);
}

/* The log's append of interval `at` s failed with `err`. */
static void log_append_lost(tb_writer *w, int64_t at, int err)
{
	struct wbuf b = {.file = FILE_LOG, .interval_ns = at * S, .len = 100};
	w->files[FILE_LOG].size += b.len;
	wr_buffer_done_locked(w, &b, err);
}

/* The sidecar's preamble goes out holding the log's run of lost intervals;
 * a loss comes while it is in flight, and starts a run of its own beside
 * it. The preamble fails (the sidecar is full too): the two are one run
 * again, one row when it is written. */
static void a_run_begun_beside_a_failed_preamble_joins_it(void **state)
{
	(void)state;
	tb_writer *w = bare_writer();
	struct wfile *side = &w->files[FILE_SIDECAR];
	log_append_lost(w, 10, -EFBIG);
	wr_compose_preamble_locked(side, FILE_SIDECAR);
	assert_int_equal(side->pre_notes, 1);
	log_append_lost(w, 11, -EFBIG);
	log_append_lost(w, 12, -EFBIG);
	assert_int_equal(side->nnotes, 2); /* the in-flight one is not widened */
	wr_preamble_done_locked(w, side, -EFBIG);
	assert_int_equal(side->nnotes, 1);
	assert_int_equal(side->notes[0].first_ns, 10 * S);
	assert_int_equal(side->notes[0].last_ns, 12 * S);
	assert_int_equal(side->notes[0].intervals, 3);
	free_writer(w);
}

/* An interval lost on both sides of the seam (two appends of it, one
 * before the preamble went out and one while it was in flight) is one
 * interval of the joined run. */
static void an_interval_at_the_seam_counts_once(void **state)
{
	(void)state;
	tb_writer *w = bare_writer();
	struct wfile *side = &w->files[FILE_SIDECAR];
	log_append_lost(w, 10, -EFBIG);
	log_append_lost(w, 11, -EFBIG);
	wr_compose_preamble_locked(side, FILE_SIDECAR);
	log_append_lost(w, 11, -EFBIG); /* its second append */
	log_append_lost(w, 12, -EFBIG);
	wr_preamble_done_locked(w, side, -EFBIG);
	assert_int_equal(side->nnotes, 1);
	assert_int_equal(side->notes[0].intervals, 3); /* 10, 11, 12 */
	free_writer(w);
}

/* Written whole, the preamble's row is on disk: the run begun beside it
 * stays a row of its own. A run for another reason, or after an append
 * written whole, never joins. */
static void only_a_run_that_continues_a_failed_preamble_joins_it(void **state)
{
	(void)state;
	tb_writer *w = bare_writer();
	struct wfile *side = &w->files[FILE_SIDECAR];
	log_append_lost(w, 10, -EFBIG);
	wr_compose_preamble_locked(side, FILE_SIDECAR);
	log_append_lost(w, 11, -EFBIG);
	wr_preamble_done_locked(w, side, 0);
	assert_int_equal(side->nnotes, 1);
	assert_int_equal(side->notes[0].first_ns, 11 * S);
	assert_int_equal(side->notes[0].intervals, 1);

	wr_compose_preamble_locked(side, FILE_SIDECAR); /* holds 11 */
	log_append_lost(w, 12, -ENOSPC);                /* another reason */
	struct wbuf ok = {.file = FILE_LOG, .interval_ns = 13 * S, .len = 100};
	wr_buffer_done_locked(w, &ok, 0);               /* 13 written */
	log_append_lost(w, 14, -EFBIG);                 /* after it */
	assert_int_equal(side->nnotes, 3);
	wr_preamble_done_locked(w, side, -EFBIG);
	assert_int_equal(side->nnotes, 3);
	assert_int_equal(side->notes[0].last_ns, 11 * S);
	assert_int_equal(side->notes[1].err, -ENOSPC);
	assert_int_equal(side->notes[2].first_ns, 14 * S);
	free_writer(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_run_begun_beside_a_failed_preamble_joins_it),
		cmocka_unit_test(only_a_run_that_continues_a_failed_preamble_joins_it),
		cmocka_unit_test(an_interval_at_the_seam_counts_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
