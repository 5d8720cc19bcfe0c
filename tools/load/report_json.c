/* report_json.c - `tailbus load`'s report as one JSON object: the run's
 * settings, each rate's figures, counts and series, the knee and the tail
 * verdicts, and the machine.
 *
 * Its members are an interface (tests/load_cli.sh and bench/observer read them):
 * names and meanings stay; latencies are integer ns.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "../cli.h"
#include "load.h"
#include "tailbus/analysis.h"
#include "tailbus/json.h"

/* The figures of one histogram as JSON members, after "metric" when given. */
static void json_summary(const char *metric, const tb_summary *s)
{
	if (metric) {
		printf("\"metric\":");
		tb_json_string(stdout, metric);
		printf(",");
	}
	printf("\"count\":%" PRId64 ",\"min\":%" PRId64, s->total, s->min);
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		printf(",\"%s\":%" PRId64, tb_summary_keys[p], s->pct[p]);
	printf(",\"max\":%" PRId64 ",\"insufficient\":[", s->max);
	for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (s->insufficient[p])
			printf("%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
	}
	printf("]");
}

/* One rate: its figures, its counts, its series. */
static void json_run(const struct result *res, const struct config *c, bool knee)
{
	printf("{\"offered\":%" PRIu64 ",\"achieved\":%.3f,\"send_rate\":%.3f,", res->rate,
	       res->achieved, res->send_rate);
	json_summary(res->metric, &res->open);
	printf(",\"service\":{");
	json_summary(NULL, &res->service);
	printf("},\"warmup_count\":%" PRIu64 ",\"late\":%" PRIu64 ",\"late_held\":%" PRIu64
	       ",\"late_busy\":%" PRIu64 ",\"late_descheduled\":%" PRIu64
	       ",\"max_send_lag_ns\":%" PRId64 ",\"gaps\":%" PRIu64
	       ",\"stolen_ns\":%" PRId64 ",\"max_gap_ns\":%" PRId64
	       ",\"engine_max_gap_ns\":%" PRId64 ",\"run_ns\":%" PRId64
	       ",\"stalls\":%" PRIu64 ",\"unsent\":%" PRIu64 ",\"unserved\":%" PRIu64
	       ",\"growing\":%s,\"knee\":%s,\"closed\":",
	       res->warmup, res->late, res->late_held, res->late_busy, res->late_descheduled,
	       res->max_lag_ns, res->gaps, res->stolen_ns, res->max_gap_ns, res->engine_max_gap_ns,
	       res->run_ns, res->stalls, res->unsent, res->unserved, res->growing ? "true" : "false",
	       knee ? "true" : "false");
	if (c->closed) {
		printf("{");
		json_summary(res->metric_closed, &res->closed);
		printf("}");
	} else {
		printf("null");
	}
	int64_t row_s = (int64_t)(res->series_ns / TB_NS_PER_SEC);
	printf(",\"series_row_s\":%" PRId64 ",\"series\":[", row_s);
	for (size_t i = 0; i < res->nseries; i++) {
		const tb_sweep_row *row = &res->series[i];
		printf("%s{\"t\":%" PRId64 ",\"count\":%" PRId64 ",\"p50\":%" PRId64
		       ",\"p99\":%" PRId64 ",\"max\":%" PRId64 "}",
		       i ? "," : "", (int64_t)i * row_s, row->count, row->p50, row->p99, row->max);
	}
	printf("]}");
}

/* The whole report as one JSON object on one line. */
void load_report_json(const struct result *res, size_t n, const struct config *c, int knee,
		      int tail, const struct bus_state *b)
{
	printf("{\"bus\":");
	if (c->bus)
		tb_json_string(stdout, c->bus);
	else
		printf("null");
	printf(",\"record\":%s", b->off ? "false" : "true");
	printf(",\"bus_ok\":%s,\"collector_running\":%s,\"drops\":%" PRIu64
	       ",\"mode\":\"%s\",\"arrivals\":\"%s\",\"seed\":%" PRIu64 ",\"service_ns\":%" PRId64
	       ",\"stall_every_ns\":%" PRId64 ",\"stall_ns\":%" PRId64 ",\"duration_ns\":%" PRId64
	       ",\"warmup_ns\":%" PRId64 ",\"drain_ns\":%" PRId64 ",\"late_ns\":%" PRId64
	       ",\"queue\":%" PRIu32 ",\"threads\":%d,\"runs\":[",
	       b->error || b->off ? "false" : "true",
	       b->error || b->off || b->no_collector ? "false" : "true",
	       b->dropped, c->closed ? "closed" : "open", c->poisson ? "poisson" : "constant",
	       c->seed, c->service_ns, c->stall_every_ns, c->stall_ns, c->duration_ns, c->warmup_ns,
	       c->drain_ns, c->late_ns, c->queue - 1, c->engine_cpu < 0 ? 1 : 2);
	for (size_t k = 0; k < n; k++) {
		printf("%s", k ? "," : "");
		json_run(&res[k], c, (int)k == knee);
	}
	printf("],\"knee_rate\":");
	if (knee >= 0)
		printf("%" PRIu64, res[knee].rate);
	else
		printf("null");
	printf(",\"stall_suspected\":%s,\"tail_from_machine\":%s,",
	       tail == TB_TAIL_STALL ? "true" : "false", tail == TB_TAIL_MACHINE ? "true" : "false");
	fflush(stdout);
	tb_cli_env_json(stdout);
	printf("}\n");
}
