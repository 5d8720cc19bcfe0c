/* sweep_plot.c - `tailbus load --sweep --plot DIR`: latency from the
 * intended time against offered rate, as an SVG (tools/plot.h draws it).
 *
 * p50, p99, p99.9 and max per rate, the knee marked with the rule that found
 * it; a figure with fewer than TB_MIN_SAMPLES_BEYOND samples beyond it is
 * drawn hollow.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../plot.h"
#include "load.h"
#include "tailbus/analysis.h"

/* The knee marker's label: the rate and which rule found it (tb_sweep_knee). */
static void knee_label(char *buf, size_t cap, const struct result *res, int knee, int rule)
{
	const struct result *k = &res[knee];
	if (rule == TB_KNEE_ACHIEVED)
		snprintf(buf, cap, "knee %" PRIu64 "/s: achieved %.0f%%", k->rate,
			 100.0 * k->achieved / (double)k->rate);
	else
		snprintf(buf, cap, "knee %" PRIu64 "/s: p99 %.1fx the lowest rate's", k->rate,
			 res[0].open.pct[P99] > 0
				 ? (double)k->open.pct[P99] / (double)res[0].open.pct[P99] : 0.0);
}

/* --plot DIR with --sweep: p50, p99, p99.9 and max against offered rate,
 * the knee marked with the rule that found it; a figure with fewer than
 * TB_MIN_SAMPLES_BEYOND samples beyond it is drawn hollow. The subtitle says
 * what was run and how many samples each rate had. Returns 0 or a negative
 * errno. */
int load_plot_sweep(const struct config *c, const struct result *res, size_t n, int knee, int rule)
{
	static const char *labels[] = {"p50", "p99", "p99.9", "max"};
	static const double levels[] = {50.0, 99.0, 99.9, 100.0};
	enum { FIGS = 4 };
	tb_plot_point *pts = calloc(n * FIGS, sizeof(*pts));
	bool *weak = calloc(n * FIGS, sizeof(*weak));
	if (!pts || !weak) {
		free(pts);
		free(weak);
		return -ENOMEM;
	}
	tb_plot_series series[FIGS];
	int64_t fewest = INT64_MAX, most = 0;
	for (size_t k = 0; k < n; k++) {
		const tb_summary *s = &res[k].open;
		const int64_t v[FIGS] = {s->pct[P50], s->pct[P99], s->pct[P999], s->max};
		for (int f = 0; f < FIGS; f++) {
			pts[(size_t)f * n + k] = (tb_plot_point){(double)res[k].rate, (double)v[f]};
			weak[(size_t)f * n + k] = f < FIGS - 1 && !tb_percentile_sufficient(s->total, levels[f]);
		}
		fewest = s->total < fewest ? s->total : fewest;
		most = s->total > most ? s->total : most;
	}
	for (int f = 0; f < FIGS; f++)
		series[f] = (tb_plot_series){labels[f], pts + (size_t)f * n, n, NULL, TB_PLOT_SOLID, true,
					     weak + (size_t)f * n};
	char path[PATH_MAX], subtitle[256], low[32], high[32], knee_text[96] = "";
	tb_plot_count(low, sizeof(low), fewest);
	tb_plot_count(high, sizeof(high), most);
	snprintf(subtitle, sizeof(subtitle),
		 "bus %s, metric %s.r<rate>, %s loop, %s arrivals, %g s per rate after a %g s warm-up, "
		 "%s to %s samples per rate",
		 c->record && c->bus ? c->bus : "(none: --record off)", c->metric,
		 c->closed ? "closed" : "open", c->poisson ? "Poisson" : "constant",
		 (double)c->duration_ns / TB_NS_PER_SEC, (double)c->warmup_ns / TB_NS_PER_SEC, low, high);
	if (knee >= 0)
		knee_label(knee_text, sizeof(knee_text), res, knee, rule);
	snprintf(path, sizeof(path), "%s/latency-vs-rate.svg", c->plot_dir);
	mkdir(c->plot_dir, 0755);
	int rc = tb_plot_latency_vs_rate(path, "Latency from the intended time by offered rate",
					 subtitle, series, FIGS,
					 knee >= 0 ? (double)res[knee].rate : 0.0, knee_text);
	free(pts);
	free(weak);
	if (rc == 0)
		fprintf(c->json ? stderr : stdout, "plot: %s\n", path);
	return rc;
}
