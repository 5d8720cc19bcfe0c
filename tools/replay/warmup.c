/* warmup.c - `tailbus replay --warmup`: each tag's intervals in time order,
 * and where its warm-up ends (tailbus/warmup.h).
 *
 * The warm-up of a tag is counted from its first selected interval across
 * all files (rotated files of one run continue each other), so a tag's
 * rows from every file are put in one run, in time order, before the rule
 * marks them. The same runs feed --series and the plots.
 *
 * Invariants: after replay_group_rows, info[t].run holds pointers into
 * st->rows (which no longer grows), ordered by start, ties in reading order.
 */
#include <errno.h>
#include <stdlib.h>

#include "replay.h"
#include "tailbus/warmup.h"

static int by_time(const void *a, const void *b)
{
	const tb_interval_figures *x = *(tb_interval_figures *const *)a;
	const tb_interval_figures *y = *(tb_interval_figures *const *)b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : (x > y); /* rows are in reading order */
}

/* Each tag's rows in time order (after the rows are complete). */
int replay_group_rows(struct state *st)
{
	for (size_t i = 0; i < st->nrows; i++)
		st->info[st->rows[i].tag].nrun++;
	for (size_t t = 0; t < st->merge.ntags; t++) {
		struct tag_info *a = &st->info[t];
		a->run = calloc(a->nrun ? a->nrun : 1, sizeof(*a->run));
		if (!a->run)
			return -ENOMEM;
		a->nrun = 0;
	}
	for (size_t i = 0; i < st->nrows; i++) {
		struct tag_info *a = &st->info[st->rows[i].tag];
		a->run[a->nrun++] = &st->rows[i].f;
	}
	for (size_t t = 0; t < st->merge.ntags; t++)
		qsort(st->info[t].run, st->info[t].nrun, sizeof(*st->info[t].run), by_time);
	return 0;
}

int replay_decide_warmup(struct state *st)
{
	for (size_t t = 0; t < st->merge.ntags; t++) {
		struct tag_info *a = &st->info[t];
		double seconds = st->opt.warmup == WARMUP_AUTO ? -1.0 : st->opt.warmup_s;
		int rc = tb_warmup_mark(a->run, a->nrun, seconds, &a->warm);
		if (rc < 0)
			return rc;
	}
	return 0;
}
