/* main.c - `tailbus replay`: read interval logs, merge per tag, report.
 *
 *   tailbus replay FILE|-... [--tag T] [--start S] [--end E]
 *                  [--format text|json|csv|hgrm|hgrm-csv] [--output-log OUT]
 *                  [--warmup auto|SECONDS] [--series] [--correct-co INTERVAL]
 *                  [--plot DIR] [--schema S]
 *
 * Every selected interval of a tag, across all files, is added into one
 * histogram per tag (merged counts, never averaged percentiles). By default
 * the merge histogram takes the layout of the tag's first interval and grows
 * as needed, as the Java HistogramLogProcessor does, so the figures (and the
 * .hgrm text) equal its output. --digits D merges into a fresh histogram of
 * D digits from 1 up instead, as a program calling Histogram.add on a
 * `new Histogram(D)` does (the figures in tests/fixtures/.../EXPECTED.md).
 * --start/--end select intervals whose start lies that many seconds after
 * their file's StartTime, inclusive, as the Java tool does; given as
 * wall-clock times (UTC, tb_unit_parse_wallclock), they select by absolute
 * start instead, the same instants in every file: several hosts' logs, each
 * with its own StartTime, merged over one span of time.
 *
 * Each selected interval also becomes a row of per-interval figures (count,
 * p50, p99, p99.9, max): the --series output, the p99-over-time plot and the
 * input of the warm-up rule (tailbus/warmup.h). The warm-up of a tag is counted from
 * its first selected interval across all files (rotated files of one run
 * continue each other). With --warmup the files are read twice: once for the
 * rows, to decide where each tag's warm-up ends, and once to merge what
 * follows it; the texts stay in memory between the two.
 *
 * --correct-co I back-fills coordinated omission (correct.c; refused on
 * tags a log marks open-loop). --format prom-native prints each tag's
 * native Prometheus buckets (prom_native.c).
 *
 * A FILE may be "-" (standard input) and may be gzip data (log_input.c).
 *
 * A bad line or a missing file is reported in one sentence and skipped;
 * everything good is still used, and the exit status says something was wrong.
 * --output-log rewrites the selected intervals as one valid log
 * (output_log.c).
 *
 * The parts, and the one way data flows between them, are in replay.h.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/hist.h"
#include "tailbus/log_merge.h"

static void free_state(struct state *st)
{
	for (size_t i = 0; i < st->merge.ntags; i++)
		free(st->info[i].run);
	tb_log_merge_free(&st->merge);
	for (size_t i = 0; i < st->nfiles; i++) {
		free(st->files[i].text);
		tb_log_open_loop_marks_free(&st->files[i].marks);
	}
	if (st->have_corrected)
		tb_hist_free(&st->corrected);
	free(st->info);
	free(st->files);
	free(st->rows);
	free(st->kept);
}

/* Read, decide the warm-up, merge. 0, or -1 when nothing may be reported. */
static int gather(struct state *st, char **paths, size_t npaths)
{
	tb_log_merge_init(&st->merge, st->opt.digits);
	replay_read_files(st, paths, npaths);
	replay_scan(st, st->opt.warmup == WARMUP_NONE ? PASS_ONE : PASS_ROWS);
	if (st->too_many_tags)
		return -1;
	if (st->refused) {
		replay_co_explain_refusal(st);
		return -1;
	}
	if (replay_group_rows(st) < 0 ||
	    (st->opt.warmup != WARMUP_NONE && replay_decide_warmup(st) < 0)) {
		tb_cli_error(VERB, "out of memory");
		return -1;
	}
	if (st->opt.warmup != WARMUP_NONE)
		replay_scan(st, PASS_STEADY);
	if (st->opt.co_interval)
		replay_co_warn_unmarked(st);
	return 0;
}

static void report(struct state *st)
{
	switch (st->opt.format) {
	case FMT_TEXT: replay_print_text(stdout, st); break;
	case FMT_JSON: replay_print_json(stdout, st); break;
	case FMT_CSV:
		if (st->opt.series)
			replay_print_series_csv(stdout, st);
		else
			replay_print_csv(stdout, st);
		break;
	case FMT_HGRM:
	case FMT_HGRM_CSV:
		if (replay_print_hgrm(stdout, st, st->opt.format == FMT_HGRM_CSV) < 0)
			st->status = TB_EXIT_INPUT;
		break;
	case FMT_PROM_NATIVE:
		if (replay_print_prom_native(stdout, st) < 0)
			st->status = TB_EXIT_INPUT;
		break;
	}
	bool text = st->opt.format == FMT_TEXT;
	if (st->opt.warmup != WARMUP_NONE && !text && st->opt.format != FMT_JSON)
		replay_note_warmup(st);
	if (st->opt.plot_dir) {
		if (text)
			fputc('\n', stdout);
		if (replay_write_plots(st, text ? stdout : stderr) < 0)
			st->status = TB_EXIT_INPUT;
	}
}

int tb_cmd_replay(int argc, char **argv)
{
	struct state st;
	memset(&st, 0, sizeof(st));
	int rc = replay_parse_options(argc, argv, &st.opt);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	if (gather(&st, argv + optind, (size_t)(argc - optind)) < 0) {
		free_state(&st);
		return TB_EXIT_INPUT;
	}
	size_t intervals = 0, warmup = 0;
	for (size_t i = 0; i < st.merge.ntags; i++) {
		intervals += st.merge.tags[i].intervals;
		warmup += st.opt.warmup != WARMUP_NONE && st.info ? st.info[i].warm.discarded : 0;
	}
	if (st.opt.tag && tb_log_merge_find(&st.merge, st.opt.tag) < 0) {
		tb_cli_error(VERB, "tag '%s' has no intervals in the selected range of the given files",
			     st.opt.tag);
		st.status = TB_EXIT_INPUT;
	} else if (intervals == 0 && st.status == TB_EXIT_OK) {
		/* an empty report would read as "no latency at all" (where lines
		 * were refused, each has been named already) */
		tb_cli_error(VERB, warmup > 0 ? "--warmup discarded every interval of the given files"
				   : isinf(st.opt.start) && isinf(st.opt.end)
					   ? "the given files hold no interval lines"
					   : "no interval of the given files lies between --start and --end");
		st.status = TB_EXIT_INPUT;
	}
	report(&st);
	if (st.opt.output_log && replay_write_output_log(&st) < 0)
		st.status = TB_EXIT_INPUT;
	free_state(&st);
	return st.status;
}
