/* window.c - a window of `tailbus top`: how many whole intervals it is, and
 * their histograms merged into one row of a snapshot (see top.h); and the
 * snapshot's rows, added one per metric or tag and sorted by name.
 *
 * Invariants:
 *  - A window is the nearest whole number of intervals to --window, within
 *    one and the number kept per metric; top_window_check refuses (exit 2)
 *    a --window that whole intervals cannot make, naming the source.
 *  - Intervals are added newest first; the merged histogram grows to hold
 *    each one's range, so no count is clamped and none is counted twice.
 *  - A window is bounded in time too: the intervals that start within its
 *    n intervals (of the source's length, and half of one) before the end
 *    of the row's newest one. A metric quiet for a while has fewer
 *    intervals in it, never older ones; a row whose newest interval is
 *    old says how old (format_text.c).
 *  - Every figure of a row comes from the merged histogram (tb_summarize)
 *    and the intervals' bounds: percentiles of merged counts, never
 *    averaged. A percentile is marked insufficient when fewer than
 *    TB_MIN_SAMPLES_BEYOND samples are expected beyond it (tailbus/summary.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "top.h"
#include "tailbus/grow.h"

/* How many intervals of `interval_ns` make `window_ns` (the nearest whole
 * number), within 1..cap; whole seconds when the interval is not known. */
uint32_t top_window_intervals(int64_t window_ns, double interval_ns, uint32_t cap)
{
	double n = round((double)window_ns / (interval_ns > 0 ? interval_ns : (double)TOP_NS_PER_SEC));
	if (n < 1)
		n = 1;
	return n > cap ? cap : (uint32_t)n;
}

/* Can whole intervals of the snapshot's length, at most its cap, make the
 * window? -EDOM (said, naming --window) when they cannot. */
int top_window_check(const struct top_options *o, const struct top_snap *sn)
{
	if (sn->interval_s <= 0)
		return 0; /* not known yet (a log with no line): nothing to check */
	int64_t interval_ns = (int64_t)llround(sn->interval_s * TOP_NS_PER_SEC);
	char iv[32], most[32];
	tb_unit_format(iv, sizeof(iv), TB_UNIT_DURATION, interval_ns);
	int64_t most_ns;
	if (__builtin_mul_overflow(interval_ns, (int64_t)sn->window_cap, &most_ns))
		most_ns = INT64_MAX; /* lengths from the segment: any value */
	tb_unit_format(most, sizeof(most), TB_UNIT_DURATION, most_ns);
	/* a log's lengths jitter (1.001 s): a twentieth of one spare there */
	if (o->window_ns < interval_ns - (sn->from_log ? interval_ns / 20 : 0)) {
		tb_cli_bad_value(TOP_VERB, "window", o->window_arg,
				 "shorter than one interval of %s %s (%s): a window is whole intervals",
				 sn->from_log ? "log" : "bus", sn->source, iv);
		return -EDOM;
	}
	if (round((double)o->window_ns / (double)interval_ns) > sn->window_cap) {
		tb_cli_bad_value(TOP_VERB, "window", o->window_arg,
				 "longer than %s %s%s: %u intervals of %s, %s at most",
				 sn->from_log ? "top keeps of log" : "the live area of bus", sn->source,
				 sn->from_log ? "" : " keeps", sn->window_cap, iv, most);
		return -EDOM;
	}
	return 0;
}

void top_window_init(struct top_window *a)
{
	memset(a, 0, sizeof(*a));
	a->oldest_start_ns = INT64_MAX;
	a->newest_end_ns = INT64_MIN;
}

void top_window_free(struct top_window *a)
{
	if (a->have_hist)
		tb_hist_free(&a->merged);
	top_window_init(a);
}

/* How far back from the end of a window's newest interval the others may
 * start: the window's n intervals of `interval_ns`, and half of one spare
 * (lengths rounded from seconds in a log). */
int64_t top_window_reach(uint32_t n, int64_t interval_ns)
{
	int64_t reach;
	if (__builtin_mul_overflow((int64_t)n, interval_ns, &reach) ||
	    __builtin_add_overflow(reach, interval_ns / 2, &reach))
		return INT64_MAX; /* lengths from the segment: a bound that overflows bounds nothing */
	return reach;
}

/* Called newest first. The window is the time `reach_ns` (top_window_reach)
 * up to the end of the newest: an interval that starts before (a metric
 * quiet in between) is not in it, and false says so (the walk ends there).
 * The newest may be short (a collector's last, at its stop). */
bool top_window_interval(struct top_window *a, int64_t start_ns, int64_t length_ns, int64_t reach_ns)
{
	int64_t from;
	if (a->intervals > 0 && !__builtin_sub_overflow(a->newest_end_ns, reach_ns, &from) &&
	    start_ns < from)
		return false;
	if (start_ns < a->oldest_start_ns)
		a->oldest_start_ns = start_ns;
	int64_t end_ns;
	if (__builtin_add_overflow(start_ns, length_ns, &end_ns))
		end_ns = length_ns > 0 ? INT64_MAX : INT64_MIN; /* times from the segment */
	if (end_ns > a->newest_end_ns) {
		a->newest_end_ns = end_ns;
		a->newest_length_ns = length_ns;
	}
	a->intervals++;
	return true;
}

int top_window_hist(struct top_window *a, const tb_hist *h)
{
	if (!a->have_hist) {
		if (tb_hist_init_like(&a->merged, h) < 0)
			return -ENOMEM;
		a->have_hist = true;
	}
	return tb_hist_add_growing(&a->merged, h);
}

void top_window_finish(const struct top_window *a, struct top_row *r, int64_t now_ns, int64_t interval_ns)
{
	tb_summary s;
	tb_summarize(a->have_hist ? &a->merged : NULL, &s);
	r->intervals = a->intervals;
	r->count = s.total;
	r->max = s.max;
	memcpy(r->pct, s.pct, sizeof(r->pct));
	memcpy(r->insufficient, s.insufficient, sizeof(r->insufficient));
	if (a->intervals == 0)
		return;
	r->span_s = (double)(a->newest_end_ns - a->oldest_start_ns) / TOP_NS_PER_SEC;
	r->rate = r->span_s > 0 ? (double)r->count / r->span_s : 0;
	r->age_s = (double)(now_ns - a->newest_end_ns) / TOP_NS_PER_SEC;
	r->interval_s = (double)interval_ns / TOP_NS_PER_SEC;
}

struct top_row *top_add_row(struct top_snap *sn)
{
	if (tb_grow_n((void **)&sn->rows, &sn->cap, sn->nrows + 1, 16, sizeof(*sn->rows)) < 0)
		return NULL;
	struct top_row *r = &sn->rows[sn->nrows++];
	memset(r, 0, sizeof(*r));
	return r;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct top_row *)a)->name, ((const struct top_row *)b)->name);
}

void top_sort_rows(struct top_snap *sn)
{
	if (sn->nrows) /* qsort's base must not be NULL, even for no rows */
		qsort(sn->rows, sn->nrows, sizeof(*sn->rows), by_name);
}
