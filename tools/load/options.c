/* options.c - `tailbus load`'s command line into a struct config: each
 * option's value checked on its own (tailbus/units.h), then the defaults
 * that depend on other options, then the checks across options.
 *
 * Invariant: a config that load_parse accepts names a valid metric for its
 * longest name, has a warm-up shorter than the run, and a stall shorter than
 * its period; every refusal is one sentence naming the option at fault.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "load.h"
#include "tailbus/analysis.h"
#include "tailbus/segment.h"

/* Default warm-up: this fraction of the duration. */
#define WARMUP_FRACTION 0.1
/* Default drain limit: this many durations, at least one second. An engine
 * at utilisation u builds a backlog of (u - 1) * D seconds of work, so twice
 * the duration drains anything up to u = 3. */
#define DRAIN_DURATIONS 2.0
#define DRAIN_MIN_NS TB_NS_PER_SEC
#define RATE_MAX 1000000000LL  /* one request per ns */
#define DURATION_MAX_S 86400.0 /* a day */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus load --bus NAME (--rate R | --sweep R1:R2:STEPS) --duration D\n"
		"         [--dir SEGDIR] [--poisson] [--warmup W] [--service-ns N]\n"
		"         [--stall-every T --stall-ns S] [--closed] [--metric NAME] [--seed SEED]\n"
		"         [--json] [--cpu C] [--engine-cpu E] [--late-ns L] [--queue Q] [--drain X]\n"
		"         [--plot DIR] [--record on|off] [--version]\n"
		"Open-loop load from intended send times, served by a FIFO engine and recorded\n"
		"through the bus as <metric> (from intended), <metric>.warmup and, with --closed,\n"
		"<metric>.closed (from the actual send). The bus is found in --dir, else\n"
		"$TAILBUS_DIR, else hugetlbfs or /dev/shm. D, W, T, X, N, S and L are durations\n"
		"(10s, 100ms, 500us, 1m): a bare number is seconds for D, W, T and X and\n"
		"nanoseconds for N, S and L. Defaults: --warmup D/10, --service-ns 0,\n"
		"--metric %s, --seed 1, --late-ns %d, --queue %d, --drain 2D (at least 1 s).\n"
		"Generator and engine share one thread (on CPU C) unless --engine-cpu gives\n"
		"the engine its own.\n"
		"The report adds the engine's service time (done minus start of service).\n"
		"--record off: record nothing into the bus (no tb_attach, no tb_span), all else\n"
		"the same, to measure the observer effect; --bus is optional then.\n",
		DEFAULT_METRIC, LATE_NS_DEFAULT, QUEUE_DEFAULT);
}

/* What each option takes (tailbus/units.h). Durations take any unit; a bare
 * number keeps the option's unit: seconds for the run's spans, ns for the
 * engine's. */
#define DURATION_MAX_NS ((int64_t)DURATION_MAX_S * TB_UNIT_S)
static const tb_unit_spec run_span = {TB_UNIT_DURATION, TB_UNIT_S, 1, DURATION_MAX_NS};
static const tb_unit_spec run_span_or_zero = {TB_UNIT_DURATION, TB_UNIT_S, 0, DURATION_MAX_NS};
static const tb_unit_spec engine_ns = {TB_UNIT_DURATION, TB_UNIT_NS, 0, DURATION_MAX_NS};
static const tb_unit_spec late_ns = {TB_UNIT_DURATION, TB_UNIT_NS, 1, DURATION_MAX_NS};
static const tb_unit_spec rate = {TB_UNIT_COUNT, 1, 1, RATE_MAX};
static const tb_unit_spec sweep_steps = {TB_UNIT_COUNT, 1, 1, SWEEP_STEPS_MAX};
static const tb_unit_spec queue = {TB_UNIT_COUNT, 1, QUEUE_MIN, QUEUE_MAX};
static const tb_unit_spec cpu = {TB_UNIT_COUNT, 1, 0, CPU_SETSIZE - 1};
static const tb_unit_spec seed = {TB_UNIT_COUNT, 1, 0, INT64_MAX};

/* R1:R2:STEPS, R1 <= R2, STEPS >= 1 (R1 == R2 when STEPS is 1). */
static bool parse_sweep(const char *opt, const char *s, struct config *c)
{
	char buf[96];
	char *a = buf, *b = NULL, *d = NULL;
	if (strlen(s) < sizeof(buf)) {
		strcpy(buf, s);
		b = strchr(a, ':');
		d = b ? strchr(b + 1, ':') : NULL;
	}
	if (!b || !d) {
		tb_cli_bad_value(VERB, opt, s, "want R1:R2:STEPS");
		return false;
	}
	*b++ = 0;
	*d++ = 0;
	if (tb_unit_parse(a, &rate, &c->sweep_from) < 0 || tb_unit_parse(b, &rate, &c->sweep_to) < 0 ||
	    tb_unit_parse(d, &sweep_steps, &c->sweep_steps) < 0 || c->sweep_from > c->sweep_to ||
	    (c->sweep_steps == 1 && c->sweep_from != c->sweep_to)) {
		tb_cli_bad_value(VERB, opt, s,
				 "want R1:R2:STEPS, rates 1..%lld with R1 <= R2, 1..%d steps "
				 "(R1 = R2 for one step)",
				 (long long)RATE_MAX, SWEEP_STEPS_MAX);
		return false;
	}
	return true;
}

static bool parse_one(int opt, const char *name, const char *arg, struct config *c)
{
	int64_t v;
	switch (opt) {
	case 'b': c->bus = arg; return true;
	case 'm': c->metric = arg; return true;
	case 'r':
		if (!tb_cli_unit(VERB, name, arg, &rate, &v))
			return false;
		c->rate = (uint64_t)v;
		return true;
	case 'P': c->poisson = true; return true;
	case 'C': c->closed = true; return true;
	case 'j': c->json = true; return true;
	case 'p': c->plot_dir = arg; return true;
	case 'd': return tb_cli_unit(VERB, name, arg, &run_span, &c->duration_ns);
	case 'w':
		c->warmup_set = true;
		return tb_cli_unit(VERB, name, arg, &run_span_or_zero, &c->warmup_ns);
	case 'D':
		c->drain_set = true;
		return tb_cli_unit(VERB, name, arg, &run_span_or_zero, &c->drain_ns);
	case 'T': return tb_cli_unit(VERB, name, arg, &run_span, &c->stall_every_ns);
	case 'S': return tb_cli_unit(VERB, name, arg, &engine_ns, &c->stall_ns);
	case 'n': return tb_cli_unit(VERB, name, arg, &engine_ns, &c->service_ns);
	case 'l': return tb_cli_unit(VERB, name, arg, &late_ns, &c->late_ns);
	case 'q':
		if (!tb_cli_unit(VERB, name, arg, &queue, &v))
			return false;
		c->queue = (uint32_t)v;
		return true;
	case 'c':
	case 'e':
		if (!tb_cli_unit(VERB, name, arg, &cpu, &v))
			return false;
		*(opt == 'c' ? &c->cpu : &c->engine_cpu) = (int)v;
		return true;
	case 's':
		if (!tb_cli_unit(VERB, name, arg, &seed, &v))
			return false;
		c->seed = (uint64_t)v;
		return true;
	case 'W': return parse_sweep(name, arg, c);
	case 'R':
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
			tb_cli_bad_value(VERB, name, arg, "want on or off");
			return false;
		}
		c->record = strcmp(arg, "on") == 0;
		return true;
	case 'B': c->dir = arg; return true;
	}
	return false;
}

/* Checks across options, after the defaults that depend on others. */
static int check_config(struct config *c)
{
	if ((!c->bus && c->record) || (!c->rate && !c->sweep_steps) || !c->duration_ns) {
		tb_cli_error(VERB, "--bus (unless --record off), --rate (or --sweep) and --duration "
			     "are required");
		usage(stderr);
		return -EINVAL;
	}
	if (c->rate && c->sweep_steps) {
		tb_cli_error(VERB, "--rate and --sweep exclude each other");
		return -EINVAL;
	}
	if (!c->warmup_set)
		c->warmup_ns = (int64_t)((double)c->duration_ns * WARMUP_FRACTION);
	if (c->warmup_ns >= c->duration_ns) {
		tb_cli_error(VERB, "--warmup must be shorter than --duration");
		return -EINVAL;
	}
	if (!c->drain_set) {
		c->drain_ns = (int64_t)((double)c->duration_ns * DRAIN_DURATIONS);
		if (c->drain_ns < DRAIN_MIN_NS)
			c->drain_ns = DRAIN_MIN_NS;
	}
	if ((c->stall_ns > 0) != (c->stall_every_ns > 0)) {
		tb_cli_error(VERB, "--stall-every and --stall-ns go together");
		return -EINVAL;
	}
	if (c->stall_ns >= c->stall_every_ns && c->stall_ns > 0) {
		tb_cli_error(VERB, "--stall-ns must be shorter than --stall-every");
		return -EINVAL;
	}
	/* the longest name this run registers must be a valid metric name */
	char longest[NAME_BUF];
	int len = snprintf(longest, sizeof(longest), "%s%s.warmup", c->metric,
			   c->sweep_steps ? ".r1000000000" : "");
	if (len < 0 || (size_t)len >= sizeof(longest) || !tb_seg_metric_name_valid(c->metric) ||
	    !tb_seg_metric_name_valid(longest)) {
		tb_cli_error(VERB, "--metric '%s' is not a valid metric name: [A-Za-z0-9_.:-] only, "
			     "and short enough that '%s' fits in %d bytes",
			     c->metric, c->sweep_steps ? "<metric>.r<rate>.warmup" : "<metric>.warmup",
			     TB_METRIC_NAME_MAX - 1);
		return -EINVAL;
	}
	if (c->cpu >= 0 && c->cpu == c->engine_cpu) {
		tb_cli_error(VERB, "--engine-cpu must differ from --cpu: two spinning threads "
			     "cannot share a core");
		return -EINVAL;
	}
	return 0;
}

/* The command line into *c. */
int load_parse(int argc, char **argv, struct config *c)
{
	static const struct option longs[] = {
		{"bus", required_argument, 0, 'b'},	    {"rate", required_argument, 0, 'r'},
		{"poisson", no_argument, 0, 'P'},	    {"duration", required_argument, 0, 'd'},
		{"warmup", required_argument, 0, 'w'},	    {"service-ns", required_argument, 0, 'n'},
		{"stall-every", required_argument, 0, 'T'}, {"stall-ns", required_argument, 0, 'S'},
		{"closed", no_argument, 0, 'C'},	    {"sweep", required_argument, 0, 'W'},
		{"metric", required_argument, 0, 'm'},	    {"seed", required_argument, 0, 's'},
		{"json", no_argument, 0, 'j'},		    {"cpu", required_argument, 0, 'c'},
		{"engine-cpu", required_argument, 0, 'e'},  {"late-ns", required_argument, 0, 'l'},
		{"queue", required_argument, 0, 'q'},	    {"drain", required_argument, 0, 'D'},
		{"plot", required_argument, 0, 'p'},	    {"record", required_argument, 0, 'R'},
		{"dir", required_argument, 0, 'B'},	    {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},	    {0, 0, 0, 0}};
	int opt, idx = 0;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if (opt == 'V') {
			tb_cli_version();
			return 1;
		}
		if (opt == '?' || opt == ':') {
			tb_cli_bad_option(VERB, opt, argv[optind - 1]);
			if (opt == '?')
				usage(stderr);
			return -EINVAL;
		}
		if (!parse_one(opt, longs[idx].name, optarg, c))
			return -EINVAL;
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		return -EINVAL;
	}
	return check_config(c);
}
