/* output.c - `tailbus replay`'s reports: text, json, csv (summary or
 * --series rows) and the .hgrm formats.
 *
 * Every format gives each tag's merged count, min, p50..p99.99, max and
 * mean (tailbus/summary.h), with the percentiles that have too few samples
 * beyond them marked; text and json add where each tag's warm-up ends,
 * and where the log was measured (its header's env lines, of the first
 * file that has them). Formats with no place for the warm-up (csv, hgrm)
 * say it on stderr. --format hgrm prints Java HistogramLogProcessor's .hgrm
 * byte for byte (tailbus/report.h), for each tag in the layout Java's merge
 * would have reached.
 *
 * Text from the logs (tags, env values) is escaped in every format
 * (tb_cli_text; JSON by its own rules), so a log cannot drive the terminal.
 *
 * Invariants: reads the state, never changes it; stdout gets the report
 * only.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/json.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"
#include "tailbus/warmup.h"

static const char *const warmup_status[] = {
	[TB_WARMUP_FOUND] = "found",
	[TB_WARMUP_TOO_FEW] = "not_enough_intervals",
	[TB_WARMUP_NO_STEADY] = "no_steady_state",
	[TB_WARMUP_FIXED] = "fixed",
};

static size_t non_empty(const struct tag_info *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nrun; i++)
		n += t->run[i]->count > 0;
	return n;
}

/* The sentence saying where a tag's warm-up ends (no newline). */
static void print_warmup(FILE *out, const char *name, const struct tag_info *t)
{
	char esc[TAG_ESCAPED_MAX];
	fprintf(out, "%s%s: ", *name ? "tag " : "", tb_cli_text(esc, sizeof(esc), tag_label(name)));
	switch (t->warm.outcome) {
	case TB_WARMUP_FOUND:
	case TB_WARMUP_FIXED:
		fprintf(out, "warm-up ends at %.1f s (%zu interval%s discarded)", t->warm.seconds,
			t->warm.discarded, t->warm.discarded == 1 ? "" : "s");
		break;
	case TB_WARMUP_TOO_FEW:
		fprintf(out, "not enough intervals to find a steady state (%zu non-empty, the rule "
			"needs %d); nothing discarded", non_empty(t), TB_WARMUP_MIN_INTERVALS);
		break;
	case TB_WARMUP_NO_STEADY:
		fprintf(out, "no steady state found (p50 or p99 still drift from the medians of the "
			"rest of the run after half of it); nothing discarded");
		break;
	}
}

static void json_series(FILE *out, const struct tag_info *t)
{
	fprintf(out, ",\"series\":[");
	for (size_t i = 0; i < t->nrun; i++) {
		const tb_interval_figures *f = t->run[i];
		fprintf(out, "%s{\"t\":%.3f,\"start_s\":%.3f,\"length_s\":%.3f,\"count\":%" PRId64
			",\"p50\":%" PRId64 ",\"p99\":%" PRId64 ",\"p99_9\":%" PRId64
			",\"max\":%" PRId64 ",\"warmup\":%s}",
			i ? "," : "", f->start - t->run[0]->start, f->start, f->length, f->count,
			f->p50, f->p99, f->p99_9, f->max, f->warmup ? "true" : "false");
	}
	fputc(']', out);
}

/* Keys after the original ones (README's stable interface): additions only. */
static void json_additions(FILE *out, const struct state *st, const struct tag_info *t)
{
	if (st->opt.warmup == WARMUP_NONE)
		fprintf(out, ",\"warmup_s\":0,\"warmup_intervals\":0,\"warmup_status\":\"none\"");
	else if (isnan(t->warm.seconds))
		fprintf(out, ",\"warmup_s\":null,\"warmup_intervals\":0,\"warmup_status\":\"%s\"",
			warmup_status[t->warm.outcome]);
	else
		fprintf(out, ",\"warmup_s\":%.3f,\"warmup_intervals\":%zu,\"warmup_status\":\"%s\"",
			t->warm.seconds, t->warm.discarded, warmup_status[t->warm.outcome]);
	if (st->opt.co_interval)
		fprintf(out, ",\"co_interval\":%" PRId64, st->opt.co_interval);
	if (st->opt.series)
		json_series(out, t);
}

/* Calls fn(out, k, field) for each "#[env key=value]" line in the header of
 * the first readable file that has them (the machine the log was measured
 * on, as tailbusd records it). Returns how many. */
typedef void env_fn(FILE *out, int k, const tb_log_env_field *f);
static int each_env_line(const struct state *st, env_fn *fn, FILE *out)
{
	int n = 0;
	for (size_t i = 0; i < st->nfiles && !n; i++) {
		const struct file *f = &st->files[i];
		size_t pos = 0;
		tb_log_env_field field;
		while (f->text && tb_log_env_next(f->text, f->len, &pos, &field))
			fn(out, n++, &field);
	}
	return n;
}

static void env_ignore(FILE *out, int k, const tb_log_env_field *f)
{
	(void)out, (void)k, (void)f;
}

static void env_json_member(FILE *out, int k, const tb_log_env_field *f)
{
	fputs(k ? "," : "", out);
	tb_json_string_n(out, f->key, f->key_len);
	fputc(':', out);
	tb_json_string_n(out, f->value, f->value_len);
}

static void env_text_item(FILE *out, int k, const tb_log_env_field *f)
{
	static const char *shown[] = {"hostname", "kernel", "cpu_model", "cpus", "clocksource", "commit"};
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		if (strlen(shown[i]) == f->key_len && !strncmp(f->key, shown[i], f->key_len)) {
			fprintf(out, "%s%.*s=", k ? " " : "", (int)f->key_len, f->key);
			tb_cli_put_text(out, f->value, f->value_len);
		}
	}
}

void replay_print_json(FILE *out, const struct state *st)
{
	fprintf(out, "{\"tags\":[");
	for (size_t i = 0; i < st->merge.ntags; i++) {
		const tb_log_merge_tag *m = &st->merge.tags[i];
		tb_summary s;
		tb_summarize(&m->hist, &s);
		fprintf(out, "%s{\"tag\":", i ? "," : "");
		tb_json_string(out, m->name);
		fprintf(out, ",\"intervals\":%zu,\"count\":%" PRId64 ",\"min\":%" PRId64,
			m->intervals, s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",\"%s\":%" PRId64, tb_summary_keys[p], s.pct[p]);
		fprintf(out, ",\"max\":%" PRId64 ",\"mean\":%.17g,\"insufficient\":[", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
		}
		fputc(']', out);
		json_additions(out, st, &st->info[i]);
		fputc('}', out);
	}
	/* where the log was measured (tailbusd logs carry it), or null */
	fprintf(out, "],\"env\":");
	if (each_env_line(st, env_ignore, out) == 0) {
		fprintf(out, "null");
	} else {
		fputc('{', out);
		each_env_line(st, env_json_member, out);
		fputc('}', out);
	}
	fprintf(out, "}\n");
}

void replay_print_csv(FILE *out, const struct state *st)
{
	bool warm = st->opt.warmup != WARMUP_NONE;
	fprintf(out, "tag,intervals,count,min");
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		fprintf(out, ",%s", tb_summary_keys[p]);
	fprintf(out, ",max,mean,insufficient%s\n", warm ? ",warmup_s,warmup_intervals" : "");
	for (size_t i = 0; i < st->merge.ntags; i++) {
		const tb_log_merge_tag *m = &st->merge.tags[i];
		const struct tag_info *t = &st->info[i];
		tb_summary s;
		tb_summarize(&m->hist, &s);
		char esc[TAG_ESCAPED_MAX];
		fprintf(out, "%s,%zu,%" PRId64 ",%" PRId64, tb_cli_text(esc, sizeof(esc), m->name),
			m->intervals, s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",%" PRId64, s.pct[p]);
		fprintf(out, ",%" PRId64 ",%.3f,", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s%s", n++ ? " " : "", tb_summary_keys[p]);
		}
		if (warm && isnan(t->warm.seconds))
			fprintf(out, ",,0");
		else if (warm)
			fprintf(out, ",%.3f,%zu", t->warm.seconds, t->warm.discarded);
		fputc('\n', out);
	}
}

/* --series --format csv: one row per interval instead of the summary. */
void replay_print_series_csv(FILE *out, const struct state *st)
{
	fprintf(out, "tag,t,start,length,count,p50,p99,p99_9,max,warmup\n");
	for (size_t i = 0; i < st->merge.ntags; i++) {
		const struct tag_info *t = &st->info[i];
		char esc[TAG_ESCAPED_MAX];
		tb_cli_text(esc, sizeof(esc), st->merge.tags[i].name);
		for (size_t k = 0; k < t->nrun; k++) {
			const tb_interval_figures *f = t->run[k];
			fprintf(out, "%s,%.3f,%.3f,%.3f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
				",%" PRId64 ",%d\n",
				esc, f->start - t->run[0]->start, f->start, f->length, f->count,
				f->p50, f->p99, f->p99_9, f->max, f->warmup);
		}
	}
}

static void print_series_text(FILE *out, const struct tag_info *t)
{
	fprintf(out, "  series (t: seconds after the first interval; w: warm-up, not merged)\n");
	fprintf(out, "  %10s %12s %14s %14s %14s %14s\n", "t", "count", "p50", "p99", "p99.9",
		"max");
	for (size_t k = 0; k < t->nrun; k++) {
		const tb_interval_figures *f = t->run[k];
		fprintf(out, "  %10.3f %12" PRId64 " %14" PRId64 " %14" PRId64 " %14" PRId64
			" %14" PRId64 "%s\n",
			f->start - t->run[0]->start, f->count, f->p50, f->p99, f->p99_9, f->max,
			f->warmup ? "  w" : "");
	}
}

void replay_print_text(FILE *out, const struct state *st)
{
	bool any_mark = false;
	if (st->opt.co_interval)
		fprintf(out, "corrected for coordinated omission with expected interval %" PRId64
			" (closed-loop back-fill)\n\n", st->opt.co_interval);
	for (size_t i = 0; i < st->merge.ntags; i++) {
		const tb_log_merge_tag *m = &st->merge.tags[i];
		const struct tag_info *t = &st->info[i];
		char esc[TAG_ESCAPED_MAX];
		tb_summary s;
		tb_summarize(&m->hist, &s);
		if (i)
			fputc('\n', out);
		if (st->opt.warmup != WARMUP_NONE) {
			print_warmup(out, m->name, t);
			fputc('\n', out);
		}
		fprintf(out, "%s%s: %zu intervals, %" PRId64 " samples\n",
			*m->name ? "tag " : "(untagged)", tb_cli_text(esc, sizeof(esc), m->name),
			m->intervals, s.total);
		fprintf(out, "  %-7s %15" PRId64 "\n", "min", s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			fprintf(out, "  %-7s %15" PRId64 "%s\n", tb_summary_labels[p], s.pct[p],
				s.insufficient[p] ? " *" : "");
			any_mark |= s.insufficient[p];
		}
		fprintf(out, "  %-7s %15" PRId64 "\n", "max", s.max);
		fprintf(out, "  %-7s %19.3f\n", "mean", s.mean);
		if (st->opt.series)
			print_series_text(out, t);
	}
	if (any_mark)
		fprintf(out, "\n* fewer than %d samples beyond this percentile: too few to trust "
			"(p99.9 needs about %d).\n",
			TB_MIN_SAMPLES_BEYOND, TB_MIN_SAMPLES_BEYOND * 1000);
	/* the machine the log was measured on, when its header says */
	fprintf(out, "\nmeasured on (log header): ");
	if (!each_env_line(st, env_text_item, out))
		fprintf(out, "not recorded");
	fputc('\n', out);
}

/* Formats without a place for it (csv, hgrm) get the warm-up on stderr. */
void replay_note_warmup(const struct state *st)
{
	for (size_t i = 0; i < st->merge.ntags; i++) {
		fprintf(stderr, "tailbus %s: ", VERB);
		print_warmup(stderr, st->merge.tags[i].name, &st->info[i]);
		fputc('\n', stderr);
	}
}

/* The .hgrm of each tag, in the layout Java's merge would have (its
 * bucket count is printed). 0, or -ENOMEM (said). */
int replay_print_hgrm(FILE *out, const struct state *st, bool csv)
{
	for (size_t i = 0; i < st->merge.ntags; i++) {
		const char *name = st->merge.tags[i].name;
		char esc[TAG_ESCAPED_MAX];
		tb_hist h;
		if (tb_log_merge_java_layout(&st->merge, i, &h) < 0) {
			tb_cli_error(VERB, "out of memory");
			return -ENOMEM;
		}
		if (st->merge.ntags > 1)
			fprintf(out, "%s#[Tag: %s]\n", i ? "\n" : "",
				tb_cli_text(esc, sizeof(esc), tag_label(name)));
		double base = st->have_start_time ? st->first_start_time : 0.0;
		/* wall-clock bounds are shown relative to the first StartTime, as Java's are */
		tb_report_hgrm_header(out, st->opt.start - (st->opt.start_wall ? base : 0),
				      st->opt.end - (st->opt.end_wall ? base : 0), base);
		tb_report_hgrm(out, &h, st->opt.ticks, st->opt.unit_ratio, csv);
		tb_hist_free(&h);
	}
	return 0;
}
