/* model.c - `tailbus model`: coordinated omission, computed instead of argued.
 *
 *   tailbus model [--rate R] [--service-us U] [--duration S] [--stall S]
 *                 [--output-log FILE]
 *
 * A client means to send R requests per second for S + stall seconds to one
 * FIFO server that answers each in U microseconds, except that after S
 * seconds it stalls for `stall` seconds; what arrives during the stall is
 * answered when it ends (Gil Tene's example: 100/s, 1 ms, 100 s, then a
 * 100 s freeze). The same completions are measured twice:
 *   closed loop - the client waits for each answer before sending the next,
 *                 and times from its actual send (what most tools report);
 *   open loop   - requests leave on schedule and are timed from the intended
 *                 send time (what the users of the system experience).
 * Both are recorded into HDR histograms and, with --output-log, written as an
 * interval log (tags "closed" and "open", one line per second of completion)
 * that `tailbus replay` and the Java tools read.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tailbus/analysis.h"
#include "tailbus/log.h"
#include "tailbus/summary.h"

#define VERB "model"
#define NS_PER_US 1000LL
#define INTERVAL_NS TB_NS_PER_SEC

struct model {
	uint64_t rate;
	int64_t service_ns, duration_ns, stall_ns;
	size_t n;
	int64_t *intended, *service, *closed, *open, *done;
	size_t closed_n, open_n;
};

static int build(struct model *m)
{
	m->n = (size_t)((uint64_t)(m->duration_ns + m->stall_ns) / TB_NS_PER_SEC * m->rate);
	int64_t **arrays[] = {&m->intended, &m->service, &m->closed, &m->open, &m->done};
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		*arrays[i] = calloc(m->n ? m->n : 1, sizeof(int64_t));
		if (!*arrays[i])
			return -ENOMEM;
	}
	if (tb_schedule_fill(0, m->rate, m->intended, m->n) < 0)
		return -EOVERFLOW;
	int64_t stall_end = m->duration_ns + m->stall_ns;
	bool stalled = false;
	for (size_t i = 0; i < m->n; i++) {
		int64_t t = m->intended[i];
		if (m->stall_ns > 0 && t >= m->duration_ns && t < stall_end) {
			/* the first request in the stall takes all of it; those behind
			 * it are answered as it ends */
			m->service[i] = stalled ? 0 : stall_end - t;
			stalled = true;
		} else {
			m->service[i] = m->service_ns;
		}
	}
	int rc = tb_fifo_closed_loop_latencies(m->intended, m->service, m->n, m->closed);
	if (rc == 0)
		rc = tb_fifo_open_loop_latencies(m->intended, m->service, m->n, m->open);
	if (rc == 0)
		rc = tb_fifo_done(m->intended, m->service, m->n, m->done);
	if (rc < 0)
		return rc;
	ssize_t c = tb_fifo_closed_loop_issued(m->intended, m->service, m->n, stall_end);
	ssize_t o = tb_fifo_open_loop_issued(m->intended, m->n, stall_end);
	if (c < 0 || o < 0)
		return -EINVAL;
	m->closed_n = (size_t)c;
	m->open_n = (size_t)o;
	return 0;
}

static void row(const char *label, double c, double o, bool c_thin, bool o_thin)
{
	char a[32], b[32];
	tb_cli_fmt_ns(a, sizeof(a), c);
	tb_cli_fmt_ns(b, sizeof(b), o);
	printf("%-8s %15s%s %15s%s\n", label, a, c_thin ? "*" : " ", b, o_thin ? "*" : " ");
}

static void print_table(const tb_hist *closed, const tb_hist *open)
{
	static const double levels[] = {50, 75, 90, 99, 99.9, 99.99};
	static const char *labels[] = {"p50", "p75", "p90", "p99", "p99.9", "p99.99"};
	int64_t nc = tb_hist_total(closed), no = tb_hist_total(open);
	printf("%-8s %16s %16s\n", "", "closed loop", "open loop");
	printf("%-8s %15" PRId64 "  %15" PRId64 "\n", "samples", nc, no);
	row("mean", tb_hist_mean(closed), tb_hist_mean(open), false, false);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		row(labels[i], (double)tb_hist_value_at_percentile(closed, levels[i]),
		    (double)tb_hist_value_at_percentile(open, levels[i]),
		    !tb_percentile_sufficient(nc, levels[i]), !tb_percentile_sufficient(no, levels[i]));
	row("max", (double)tb_hist_max(closed), (double)tb_hist_max(open), false, false);
	printf("(* fewer than %d samples beyond: too few to trust)\n", TB_MIN_SAMPLES_BEYOND);
}

/* One log line per tag and second of completion. */
static int write_log(const char *path, const struct model *m)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	double t0 = (double)time(NULL);
	tb_log_writer w;
	int rc = tb_log_writer_open(&w, f, "tailbus model: closed vs open loop", t0, t0, TB_LOG_ZLEVEL);
	tb_hist h;
	if (rc == 0)
		rc = tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
				  TB_HIST_DEFAULT_SIG_DIGITS);
	const char *tags[] = {"closed", "open"};
	const int64_t *lat[] = {m->closed, m->open};
	const size_t count[] = {m->closed_n, m->open_n};
	int64_t last = m->n ? m->done[m->n - 1] : 0;
	for (int64_t from = 0; rc == 0 && from <= last; from += INTERVAL_NS) {
		for (int k = 0; k < 2 && rc == 0; k++) {
			tb_hist_reset(&h);
			for (size_t i = 0; i < count[k]; i++) {
				if (m->done[i] >= from && m->done[i] < from + INTERVAL_NS)
					tb_hist_record(&h, lat[k][i]);
			}
			if (tb_hist_total(&h))
				rc = tb_log_writer_append(&w, tags[k], t0 + (double)from / 1e9, 1.0, &h);
		}
	}
	tb_log_writer_close(&w);
	tb_hist_free(&h);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: tailbus model [--rate R] [--service-us U] [--duration S] [--stall S]\n"
		     "                     [--output-log FILE] [--version]\n"
		     "Defaults: Gil Tene's example, 100/s, 1000 us, 100 s, then a 100 s stall.\n"
		     "U, S: durations (500us, 2m); a bare number is us for U, seconds for S.\n");
}

/* What each option takes: a rate and spans up to MODEL_MAX_S seconds; the
 * model runs whole seconds (build), so --duration is at least one. */
#define MODEL_MAX_S 10000000LL
static const tb_unit_spec rate_spec = {TB_UNIT_COUNT, 1, 1, MODEL_MAX_S};
static const tb_unit_spec service_spec = {TB_UNIT_DURATION, TB_UNIT_US, 0, MODEL_MAX_S * TB_UNIT_S};
static const tb_unit_spec duration_spec = {TB_UNIT_DURATION, TB_UNIT_S, TB_UNIT_S,
					   MODEL_MAX_S * TB_UNIT_S};
static const tb_unit_spec stall_spec = {TB_UNIT_DURATION, TB_UNIT_S, 0, MODEL_MAX_S * TB_UNIT_S};

static int parse(int argc, char **argv, struct model *m, const char **log)
{
	static const struct option longs[] = {
		{"rate", required_argument, 0, 'r'},     {"service-us", required_argument, 0, 'u'},
		{"duration", required_argument, 0, 'd'}, {"stall", required_argument, 0, 's'},
		{"output-log", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},        {0, 0, 0, 0}};
	int64_t v;
	int c, idx = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		const char *name = longs[idx].name;
		bool ok = true;
		switch (c) {
		case 'o': *log = optarg; break;
		case 'r':
			ok = tb_cli_unit(VERB, name, optarg, &rate_spec, &v);
			m->rate = (uint64_t)v;
			break;
		case 'u': ok = tb_cli_unit(VERB, name, optarg, &service_spec, &m->service_ns); break;
		case 'd': ok = tb_cli_unit(VERB, name, optarg, &duration_spec, &m->duration_ns); break;
		case 's': ok = tb_cli_unit(VERB, name, optarg, &stall_spec, &m->stall_ns); break;
		default:
			return tb_cli_common_option(VERB, c, argv, usage);
		}
		if (!ok)
			return -EINVAL;
	}
	return 0;
}

int tb_cmd_model(int argc, char **argv)
{
	struct model m = {.rate = 100, .service_ns = 1000 * NS_PER_US,
			  .duration_ns = 100 * TB_NS_PER_SEC, .stall_ns = 100 * TB_NS_PER_SEC};
	const char *log = NULL;
	int rc = parse(argc, argv, &m, &log);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	rc = build(&m);
	tb_hist closed, open;
	if (rc == 0)
		rc = tb_hist_init(&closed, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
				  TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc == 0)
		rc = tb_hist_init_like(&open, &closed);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot build the model: %s", strerror(-rc));
		return TB_EXIT_INPUT;
	}
	for (size_t i = 0; i < m.closed_n; i++)
		tb_hist_record(&closed, m.closed[i]);
	for (size_t i = 0; i < m.open_n; i++)
		tb_hist_record(&open, m.open[i]);
	printf("%" PRIu64 " requests/s intended, %.3f ms service, %.0f s, then a %.0f s stall\n\n",
	       m.rate, (double)m.service_ns / 1e6, (double)m.duration_ns / 1e9,
	       (double)m.stall_ns / 1e9);
	print_table(&closed, &open);
	printf("\nThe closed-loop client sent nothing while it waited, so the stall is one sample;\n"
	       "%zu requests that users would have sent during it are missing from its data.\n",
	       m.open_n - m.closed_n);
	if (log && (rc = write_log(log, &m)) < 0) {
		tb_cli_error(VERB, "cannot write %s: %s", log, strerror(-rc));
		rc = TB_EXIT_INPUT;
	}
	tb_hist_free(&closed);
	tb_hist_free(&open);
	free(m.intended);
	free(m.service);
	free(m.closed);
	free(m.open);
	free(m.done);
	return rc < 0 ? TB_EXIT_INPUT : rc;
}
