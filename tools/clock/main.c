/* main.c - `tailbus clock`: which clock to trust, what a read costs, how fine it is.
 *
 *   tailbus clock [--json] [--samples N]
 *
 * The options, then the run: measure and judge every clock
 * (tailbus/clockcheck.h), put the verdicts into words (advice.c) and print
 * a table (output_text.c) or one JSON object (output_json.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "clock.h"
#include "tailbus/env.h"

#define VERB "clock"
#define DEFAULT_SAMPLES 100000

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus clock [--json] [--samples N] [--version]\n"
		"Shows the clocksource and TSC flags, then for each clock the cost of one read\n"
		"and the distribution of back-to-back deltas (p50, p99, max, smallest non-zero)\n"
		"over N reads (default %d, from %d to %d), whether a read makes a system\n"
		"call, and which clock to use.\n",
		DEFAULT_SAMPLES, TB_CLOCKCHECK_MIN_SAMPLES, TB_CLOCKCHECK_MAX_SAMPLES);
}

static int parse(int argc, char **argv, struct run *run)
{
	static const struct option longs[] = {{"json", no_argument, 0, 'j'},
					      {"samples", required_argument, 0, 'n'},
					      {"help", no_argument, 0, 'h'},
					      {"version", no_argument, 0, 'V'},
					      {0, 0, 0, 0}};
	static const tb_unit_spec samples = {TB_UNIT_COUNT, 1, TB_CLOCKCHECK_MIN_SAMPLES,
					     TB_CLOCKCHECK_MAX_SAMPLES};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'j': run->json = true; break;
		case 'n':
			if (!tb_cli_unit(VERB, "samples", optarg, &samples, &run->c.samples))
				return -EINVAL;
			break;
		default:
			return tb_cli_common_option(VERB, c, argv, usage);
		}
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

int tb_cmd_clock(int argc, char **argv)
{
	static struct run run; /* large (one env, the advice); one per process */
	memset(&run, 0, sizeof(run));
	run.c.samples = DEFAULT_SAMPLES;
	int rc = parse(argc, argv, &run);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	rc = tb_clockcheck_init(&run.c, run.c.samples);
	if (rc == 0) {
		tb_env_collect(&run.c.env);
		rc = tb_clockcheck_measure(&run.c);
	}
	if (rc < 0) {
		tb_cli_error(VERB, "cannot measure %" PRId64 " samples: %s", run.c.samples,
			     strerror(-rc));
		return TB_EXIT_INPUT;
	}
	tb_clockcheck_judge(&run.c, &run.v);
	clock_advise(&run);
	if (run.json)
		clock_print_json(&run);
	else
		clock_print_text(&run);
	return fflush(stdout) == 0 ? TB_EXIT_OK : TB_EXIT_INPUT;
}
