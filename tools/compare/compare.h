/* compare.h - `tailbus compare`: two configurations, several runs each.
 *
 *   tailbus compare A.hlog... -- B.hlog... [--format text|json] [--plot DIR] [--tag T]
 *
 * Each file is one run (all its intervals of a tag merged into one histogram,
 * with the layout of the first, as replay does: tailbus/log_merge.h). Runs of one configuration
 * differ from each other (placement, frequency, neighbours), so a difference
 * between A and B means something only when it is larger than that noise. For
 * each tag present in every run and each figure (p50, p90, p99, p99.9,
 * p99.99, max) compare prints both sides' per-run values, their median and
 * their spread (min..max over the runs), and the verdict:
 *
 *   - "spread cannot be judged" when a side has a single run: one run shows
 *     no run-to-run noise, so no difference is called;
 *   - "too few samples" when a run has fewer than TB_MIN_SAMPLES_BEYOND
 *     samples beyond the percentile (summary.h): the figure is noise;
 *   - "A faster" or "B faster", with the ratio of the medians, only when the
 *     spreads do not overlap (every run of one side below every run of the
 *     other);
 *   - otherwise "no difference shown".
 *
 * Non-overlapping spreads are a permutation argument (tailbus/compare.h):
 * if A and B were the same, every ordering of the nA + nB runs would be
 * equally likely, and the spreads would separate by chance with probability
 * 2 / C(nA + nB, nA) (33% with 2 and 2 runs, 10% with 3 and 3, 0.8% with 5
 * and 5). compare prints that chance, so two runs a side are not mistaken for
 * proof; run the configurations interleaved (A B A B ...) so drift hits both
 * alike.
 *
 * A run's file may be "-" (standard input) or gzip'd (tb_log_load). Text
 * from the logs (tags, env values) is escaped for the terminal (tb_cli_text).
 *
 * JSON (stable; values in the log's unit):
 *   {"a":[FILE...],"b":[FILE...],"tags":[{"tag":T,
 *     "a":{"totals":[N...]},"b":{"totals":[N...]},
 *     "chance_separated":X|null,
 *     "figures":[{"figure":"p50"|"p90"|"p99"|"p99_9"|"p99_99"|"max",
 *       "a":{"runs":[V...],"median":X,"min":V,"max":V},"b":{...},
 *       "ratio":B_median/A_median|null,"insufficient":BOOL,
 *       "verdict":"a_faster"|"b_faster"|"no_difference"|"spread_unknown"|"too_few_samples"}]}],
 *    "env":{"a":S,"b":S}}   where each side was measured (its first run's log header, "" unknown)
 *
 * Files: read.c (each run's log, merged per tag), output.c (the text, JSON
 * and plots of a tag's figures), main.c (options, the figures of each tag
 * through tailbus/compare.h, the report). Calls go main -> read, output.
 */
#ifndef TAILBUS_TOOLS_COMPARE_H
#define TAILBUS_TOOLS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../cli.h"
#include "tailbus/compare.h"
#include "tailbus/log_merge.h"
#include "tailbus/summary.h"

#define VERB "compare"
#define SIDES 2
/* p50..p99.99 from summary.h, then max. */
#define FIGURES (TB_SUMMARY_PERCENTILES + 1)
#define FIGURE_MAX TB_SUMMARY_PERCENTILES

extern const char *const cmp_side_names[SIDES];

enum format { FMT_TEXT, FMT_JSON };

struct options {
	enum format format;
	const char *plot_dir;
	const char *tag; /* NULL: every tag present in all runs */
	const char **files[SIDES];
	size_t nfiles[SIDES];
};

#define ENV_TEXT_MAX 512
/* The env lines of a log header (tailbusd's) that say where a run was measured. */


struct run {
	const char *path;
	char env[ENV_TEXT_MAX]; /* where it was measured, from the log header ("" if unknown) */
	tb_log_merge merge; /* its tags (tags[].from/to: the span, for plot titles) */
};

struct side {
	struct run *runs;
	size_t nruns;
};

struct figure {
	tb_spread side[SIDES];
	bool insufficient;
	tb_verdict verdict;
	double ratio; /* B median / A median; NAN when A's is 0 */
};

/* read.c: every run of both sides; a file that cannot be read is left out
 * (and said). Returns the exit status so far, or -ENOMEM. */
int cmp_read_sides(const struct options *o, struct side *sides);
void cmp_free_sides(struct side *sides);

/* output.c */
void cmp_print_env(FILE *out, const struct side *sides);
void cmp_print_text_tag(FILE *out, const char *tag, const size_t *nruns, const struct figure *fig,
			int64_t *const totals[SIDES]);
void cmp_print_json_tag(FILE *out, const char *tag, const size_t *nruns, const struct figure *fig,
			int64_t *const totals[SIDES]);
void cmp_json_files(FILE *out, const struct side *side);
int cmp_plot_tag(const struct options *o, const struct side *sides, size_t *tag_at[SIDES],
		 const char *tag, FILE *note);

#endif
