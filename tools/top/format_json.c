/* format_json.c - a `tailbus top` snapshot as one JSON object (--json).
 *
 * The vocabulary is docs/json.md's: a bus's snapshot has "metrics", a log's
 * "tags"; a figure that does not exist (a percentile of an empty window, a
 * log's drops) is null, never 0. One object per line, one line per snapshot.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "top.h"
#include "tailbus/json.h"

/* JSON vocabulary (docs/json.md): a row is a bus's "metric" or a log's "tag". */
static void json_row(FILE *out, const struct top_row *r, bool from_log)
{
	fprintf(out, "{\"%s\":", from_log ? "tag" : "metric");
	tb_json_string(out, r->name);
	fprintf(out, ",\"intervals\":%u,\"span_s\":%.3f,\"rate\":%.3f,\"count\":%" PRId64,
		r->intervals, r->span_s, r->rate, r->count);
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (r->count)
			fprintf(out, ",\"%s\":%" PRId64, tb_summary_keys[p], r->pct[p]);
		else
			fprintf(out, ",\"%s\":null", tb_summary_keys[p]);
	}
	if (r->count)
		fprintf(out, ",\"max\":%" PRId64, r->max);
	else
		fprintf(out, ",\"max\":null");
	if (r->has_drops && !r->error)
		fprintf(out, ",\"drops\":%" PRIu64 ",\"folded\":%" PRIu64 ",\"longest_gap_us\":%" PRIu32
			     ",\"heap_let_go\":%s",
			r->drops, r->folded, r->gap_us, r->let_go ? "true" : "false");
	else
		fprintf(out, ",\"drops\":null,\"folded\":null,\"longest_gap_us\":null,\"heap_let_go\":null");
	fprintf(out, ",\"insufficient\":[");
	for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (r->insufficient[p])
			fprintf(out, "%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
	}
	fputc(']', out);
	if (r->intervals)
		fprintf(out, ",\"age_s\":%.3f", r->age_s);
	if (r->error) {
		fprintf(out, ",\"error\":");
		tb_json_string(out, r->error);
	}
	fputc('}', out);
}

void top_print_json(FILE *out, const struct top_snap *sn)
{
	fprintf(out, "{\"bus\":");
	if (sn->from_log) {
		fprintf(out, "null,\"log\":");
		tb_json_string(out, sn->source);
		fprintf(out, ",\"intervals_read\":%zu,\"bad_lines\":%zu", sn->log_intervals, sn->bad_lines);
	} else {
		tb_json_string(out, sn->source);
		fprintf(out, ",\"segment\":");
		tb_json_string(out, sn->path);
		fprintf(out, ",\"page_size\":%" PRIu64 ",\"hugepage_backed\":%s,\"collector_pid\":%d,"
			     "\"collector_running\":%s,\"rings_live\":%u,\"ring_drops\":%" PRIu64
			     ",\"ring_folded\":%" PRIu64 ",\"drain_threads\":%u,\"drain_longest_pass_us\":%u,"
			     "\"drain_self_pause_us\":%u,\"series_waits\":%u,\"closes_behind\":%u",
			sn->page_size, sn->hugepage_backed ? "true" : "false", (int)sn->collector_pid,
			sn->collector_fresh ? "true" : "false", sn->rings_live, sn->ring_drops,
			sn->ring_folded, sn->drain_threads, sn->drain_pass_us, sn->drain_self_pause_us,
			sn->series_waits, sn->closes_behind);
	}
	fprintf(out, ",\"window_s\":%.9g,\"interval_s\":%.3f,\"time\":%.3f,\"%s\":[",
		(double)sn->window_ns / TOP_NS_PER_SEC, sn->interval_s, (double)sn->now_ns / TOP_NS_PER_SEC,
		sn->from_log ? "tags" : "metrics");
	for (size_t i = 0; i < sn->nrows; i++) {
		if (i)
			fputc(',', out);
		json_row(out, &sn->rows[i], sn->from_log);
	}
	fprintf(out, "]}\n");
}

