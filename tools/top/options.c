/* options.c - `tailbus top`'s command line, into struct top_options.
 *
 * Invariants:
 *  - Parsing is strict: an unknown option, a missing or malformed value, a
 *    stray argument, or two sources at once is one sentence naming what is
 *    wrong, and exit status 2 (cli.h).
 *  - --window is any duration up to a day here; whether whole intervals can
 *    make it is known only from the source (top_window_check).
 *  - With neither --bus nor --log the bus is $TAILBUS_BUS, else "default".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "top.h"

#define NS_PER_MS 1000000LL
#define REFRESH_MS_MIN 10
#define REFRESH_MS_MAX 3600000


/* --window: any duration up to a day (the live area then decides, see
 * top_window_check); --interval-ms: 10 ms to an hour, a bare number in ms. */
#define WINDOW_DEFAULT_NS (10 * TOP_NS_PER_SEC)
static const tb_unit_spec window_spec = {TB_UNIT_DURATION, TB_UNIT_S, 1, 24 * TB_UNIT_HOUR};
static const tb_unit_spec refresh_spec = {TB_UNIT_DURATION, TB_UNIT_MS, REFRESH_MS_MIN * NS_PER_MS,
					  REFRESH_MS_MAX * NS_PER_MS};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus top [--bus NAME | --log FILE] [--dir SEGDIR] [--window W]\n"
		"                   [--once] [--json] [--interval-ms N] [--version]\n"
		"Live percentiles per metric: rate, count, p50, p90, p99, p99.9, p99.99, max and\n"
		"ring drops over a window of the newest W (default 10s; 500ms, 30s, 1m; a bare\n"
		"number is seconds) of published intervals, their histograms merged. W is\n"
		"rounded to whole intervals, from one to as many as the live area keeps (%u by\n"
		"default); a W outside that is refused. '*' marks a percentile with fewer than\n"
		"%d samples expected beyond it. The bus is NAME (default $TAILBUS_BUS, else\n"
		"'default'), found in --dir, else $TAILBUS_DIR, else hugetlbfs or /dev/shm;\n"
		"--log FILE follows an interval log instead. On a terminal the table is redrawn\n"
		"once per collector interval (or every --interval-ms); 'q' or Ctrl-C quits.\n"
		"--once prints one snapshot; --json prints one JSON object per snapshot.\n",
		TB_SEG_DEFAULT_LIVE_INTERVALS, TB_MIN_SAMPLES_BEYOND);
}

static int check_options(struct top_options *o, int argc, char **argv)
{
	if (!tb_cli_no_operands(TOP_VERB, argc, argv)) {
		return -EINVAL;
	}
	if (o->log && o->bus) {
		tb_cli_error(TOP_VERB, "give --bus or --log, not both");
		return -EINVAL;
	}
	if (o->log && o->dir) {
		tb_cli_error(TOP_VERB, "--dir locates a bus; it does not apply to --log");
		return -EINVAL;
	}
	if (!o->log && !o->bus) {
		const char *env = getenv("TAILBUS_BUS");
		o->bus = env && *env ? env : "default";
	}
	return 0;
}

int top_parse_options(int argc, char **argv, struct top_options *o)
{
	static const struct option longs[] = {
		{"bus", required_argument, 0, 'b'},    {"log", required_argument, 0, 'l'},
		{"dir", required_argument, 0, 'd'},    {"window", required_argument, 0, 'w'},
		{"once", no_argument, 0, 'o'},         {"json", no_argument, 0, 'j'},
		{"interval-ms", required_argument, 0, 'i'}, {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},      {0, 0, 0, 0}};
	*o = (struct top_options){.window_ns = WINDOW_DEFAULT_NS, .window_arg = "10s"};
	int c, idx = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		switch (c) {
		case 'b': o->bus = optarg; break;
		case 'l': o->log = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'w':
			if (!tb_cli_unit(TOP_VERB, "window", optarg, &window_spec, &o->window_ns))
				return -EINVAL;
			o->window_arg = optarg;
			break;
		case 'o': o->once = true; break;
		case 'j': o->json = true; break;
		case 'i':
			if (!tb_cli_unit(TOP_VERB, "interval-ms", optarg, &refresh_spec, &o->refresh_ns))
				return -EINVAL;
			break;
		default:
			return tb_cli_common_option(TOP_VERB, c, argv, usage);
		}
	}
	return check_options(o, argc, argv);
}

