/* warmup.c - the steady-state rule of tailbus/warmup.h.
 *
 * The medians of every suffix (intervals s..n-1) are computed in one pass from
 * the end with two heaps (the lower half in a max-heap, the upper half in a
 * min-heap, sizes equal or the lower one larger by one), so a day of 1 s
 * intervals costs n log n, not n^2. The scan for the first settled window
 * then reads them in order.
 */
#include "tailbus/warmup.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

struct heap {
	int64_t *v;
	size_t n;
	bool max; /* max-heap when true */
};

static bool above(const struct heap *h, int64_t a, int64_t b)
{
	return h->max ? a > b : a < b;
}

static void heap_push(struct heap *h, int64_t x)
{
	size_t i = h->n++;
	while (i > 0 && above(h, x, h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static int64_t heap_pop(struct heap *h)
{
	int64_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && above(h, h->v[c + 1], h->v[c]))
			c++;
		if (!above(h, h->v[c], x))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

/* med[s] = median of v[s..n-1]; lo and hi have room for n values each. */
static void suffix_medians(const int64_t *v, size_t n, double *med, int64_t *lo_mem,
			   int64_t *hi_mem)
{
	struct heap lo = {lo_mem, 0, true}, hi = {hi_mem, 0, false};
	for (size_t s = n; s-- > 0;) {
		if (lo.n == 0 || v[s] <= lo.v[0])
			heap_push(&lo, v[s]);
		else
			heap_push(&hi, v[s]);
		if (lo.n > hi.n + 1)
			heap_push(&hi, heap_pop(&lo));
		else if (hi.n > lo.n)
			heap_push(&lo, heap_pop(&hi));
		med[s] = lo.n > hi.n ? (double)lo.v[0] : ((double)lo.v[0] + (double)hi.v[0]) / 2.0;
	}
}

static bool near(int64_t v, double median, double tolerance)
{
	return fabs((double)v - median) <= tolerance * median;
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), by_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* The tolerance for one figure: TB_WARMUP_TOLERANCE, widened up to
 * TB_WARMUP_TOLERANCE_MAX when the figure is noisier than that in the second
 * half of the run. The noise is taken from differences of neighbouring
 * intervals, so a slow drift (which is not noise) does not widen it: for
 * independent normal noise of deviation sigma, the median of |v[i+1] - v[i]|
 * is sqrt(2) * 0.6745 * sigma. `scratch` holds n / 2 + 1 values. */
#define MEDIAN_ABS_DIFF_PER_SIGMA (1.41421356 * 0.6745)

static double tolerance(const int64_t *v, size_t n, double *scratch)
{
	size_t from = n / 2, m = n - from;
	for (size_t i = 0; i < m; i++)
		scratch[i] = (double)v[from + i];
	double median = median_of(scratch, m);
	if (median <= 0)
		return TB_WARMUP_TOLERANCE;
	for (size_t i = 0; i + 1 < m; i++)
		scratch[i] = fabs((double)v[from + i + 1] - (double)v[from + i]);
	double sigma = median_of(scratch, m - 1) / MEDIAN_ABS_DIFF_PER_SIGMA / median;
	return fmin(TB_WARMUP_TOLERANCE_MAX,
		    fmax(TB_WARMUP_TOLERANCE, TB_WARMUP_NOISE_SIGMAS * sigma));
}

/* Interval s and the median of the window from it are both near `median`. */
static bool settled(const int64_t *v, size_t s, double median, double tol)
{
	double window[TB_WARMUP_WINDOW];
	for (size_t i = 0; i < TB_WARMUP_WINDOW; i++)
		window[i] = (double)v[s + i];
	double w = median_of(window, TB_WARMUP_WINDOW);
	return near(v[s], median, tol) && fabs(w - median) <= tol * median;
}

int tb_warmup_find(const int64_t *p50, const int64_t *p99, size_t n, size_t *steady)
{
	if (n < TB_WARMUP_MIN_INTERVALS)
		return TB_WARMUP_TOO_FEW;
	double *med = malloc((3 * n + 1) * sizeof(*med));
	int64_t *heaps = malloc(2 * n * sizeof(*heaps));
	if (!med || !heaps) {
		free(med);
		free(heaps);
		return -ENOMEM;
	}
	double *med50 = med, *med99 = med + n;
	suffix_medians(p50, n, med50, heaps, heaps + n);
	suffix_medians(p99, n, med99, heaps, heaps + n);
	double tol50 = tolerance(p50, n, med + 2 * n), tol99 = tolerance(p99, n, med + 2 * n);
	int outcome = TB_WARMUP_NO_STEADY;
	for (size_t s = 0; s <= n / 2 && outcome != TB_WARMUP_FOUND; s++) {
		if (settled(p50, s, med50[s], tol50) && settled(p99, s, med99[s], tol99)) {
			*steady = s;
			outcome = TB_WARMUP_FOUND;
		}
	}
	free(med);
	free(heaps);
	return outcome;
}

void tb_interval_figures_of(const tb_hist *h, double start, double length,
			    tb_interval_figures *f)
{
	*f = (tb_interval_figures){start, length, tb_hist_total(h), 0, 0, 0, tb_hist_max(h), false};
	if (f->count == 0)
		return;
	f->p50 = tb_hist_value_at_percentile(h, 50.0);
	f->p99 = tb_hist_value_at_percentile(h, 99.0);
	f->p99_9 = tb_hist_value_at_percentile(h, 99.9);
}

static int mark_fixed(tb_interval_figures *const *run, size_t n, double seconds,
		      tb_warmup_result *res)
{
	*res = (tb_warmup_result){TB_WARMUP_FIXED, seconds, 0};
	for (size_t i = 0; i < n && run[i]->start - run[0]->start < seconds - TB_WARMUP_TIME_EPSILON; i++) {
		run[i]->warmup = true;
		res->discarded++;
	}
	return 0;
}

int tb_warmup_mark(tb_interval_figures *const *run, size_t n, double seconds,
		   tb_warmup_result *res)
{
	if (seconds >= 0)
		return mark_fixed(run, n, seconds, res);
	*res = (tb_warmup_result){TB_WARMUP_TOO_FEW, NAN, 0};
	int64_t *fig = malloc(2 * (n ? n : 1) * sizeof(*fig));
	size_t *at = malloc((n ? n : 1) * sizeof(*at));
	if (!fig || !at) {
		free(fig);
		free(at);
		return -ENOMEM;
	}
	size_t m = 0; /* the non-empty intervals: an idle second says nothing */
	for (size_t i = 0; i < n; i++) {
		if (run[i]->count == 0)
			continue;
		fig[m] = run[i]->p50;
		fig[n + m] = run[i]->p99;
		at[m++] = i;
	}
	size_t steady = 0;
	int rc = tb_warmup_find(fig, fig + n, m, &steady);
	if (rc >= 0)
		res->outcome = (enum tb_warmup_outcome)rc;
	if (rc == TB_WARMUP_FOUND) {
		res->seconds = run[at[steady]]->start - run[0]->start;
		for (size_t i = 0; i < at[steady]; i++)
			run[i]->warmup = true;
		res->discarded = at[steady];
	}
	free(fig);
	free(at);
	return rc < 0 ? rc : 0;
}
