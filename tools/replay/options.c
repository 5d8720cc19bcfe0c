/* options.c - `tailbus replay`'s command line into struct options.
 *
 * Every option is checked here, alone and against the others, so the
 * parts that read and print never meet a value they cannot use: a refused
 * option is one sentence on stderr (cli.h) and the usage exit status.
 * --start, --end and --warmup take durations (a bare number is seconds);
 * --start and --end also take UTC times (tb_unit_parse_wallclock), which
 * select by absolute start instead of the offset from each file's StartTime.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/hist.h"
#include "tailbus/prom.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"
#include "tailbus/units.h"
#include "tailbus/warmup.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus replay FILE... [--tag T] [--start S] [--end E]\n"
		"                      [--format text|json|csv|hgrm|hgrm-csv] [--output-log OUT]\n"
		"                      [--digits D] [--unit-ratio R] [--ticks N]\n"
		"                      [--warmup auto|DURATION] [--series] [--correct-co INTERVAL]\n"
		"                      [--plot DIR] [--format prom-native [--schema S]]\n"
		"                      [--max-tags N] [--version]\n"
		"Merges the intervals of each tag across FILEs and prints min, p50..p99.99, max\n"
		"and mean with the sample count; '*' marks a percentile with fewer than %d\n"
		"samples beyond it. --start/--end: time after each file's StartTime.\n"
		"--start, --end and --warmup take durations (30s, 2m; a bare number is seconds);\n"
		"--start and --end also take UTC times (2026-12-04T18:00:00Z, or @EPOCH_SECONDS),\n"
		"the same instants in every file (hosts' logs merged on absolute time).\n"
		"The merge histogram has the layout of each tag's first interval (as Java's\n"
		"HistogramLogProcessor); --digits D merges into a fresh D-digit one instead.\n"
		"--format hgrm prints HdrHistogram's percentile distribution, the .hgrm file\n"
		"Java's HistogramLogProcessor -o writes, byte for byte (its two header lines\n"
		"included); %d ticks per half distance unless --ticks. Values are divided by\n"
		"--unit-ratio, default %.0f as in HistogramLogProcessor (-outputValueUnitRatio),\n"
		"so nanosecond logs print in milliseconds and the file equals Java's; pass\n"
		"--unit-ratio 1 for the log's own unit. Other formats print in the log's unit.\n"
		"FILE '-' reads standard input; gzip'd logs are read as they are.\n"
		"--warmup W discards the intervals of each tag starting within SECONDS\n"
		"of its first; --warmup auto ends the warm-up at the first interval whose p50\n"
		"and p99, and their medians over the %d intervals from it, lie within +-%.0f%%\n"
		"(more for noisy figures, at most %.0f%%) of the medians of the rest of the run,\n"
		"in the run's first half (at least %d non-empty intervals needed).\n"
		"--series adds per-interval count, p50, p99, p99.9 and max (text, csv, json).\n"
		"--correct-co I back-fills coordinated omission with expected interval I\n"
		"(closed-loop data only: refused on logs marked open-loop, except tags\n"
		"ending in '.closed'). --plot DIR writes SVG charts: the percentile\n"
		"spectrum of every tag, and p99, p99.9 and max over time per tag.\n"
		"--format prom-native prints each tag's native Prometheus buckets at schema S\n"
		"(0..8, default %d) as `tailbus export` serves them, for a nanosecond log:\n"
		"'TAG INDEX LOWER UPPER COUNT' a bucket (bounds in seconds).\n"
		"--max-tags N: refuse logs of more than N tags (default %d; each tag keeps a\n"
		"histogram, up to a few hundred KB).\n",
		TB_MIN_SAMPLES_BEYOND, TB_HGRM_DEFAULT_TICKS, TB_HGRM_JAVA_UNIT_RATIO, TB_WARMUP_WINDOW,
		TB_WARMUP_TOLERANCE * 100.0, TB_WARMUP_TOLERANCE_MAX * 100.0, TB_WARMUP_MIN_INTERVALS,
		TB_PROM_SCHEMA_DEFAULT, MAX_TAGS_DEFAULT);
}

/* What each option takes (tailbus/units.h): --start, --end and --warmup are
 * durations, a bare number in seconds as before; the rest whole numbers. */
static const tb_unit_spec offset_spec = {TB_UNIT_DURATION, TB_UNIT_S, 0, INT64_MAX};
static const tb_unit_spec digits_spec = {TB_UNIT_COUNT, 1, TB_HIST_MIN_SIG_DIGITS,
					 TB_HIST_MAX_SIG_DIGITS};
static const tb_unit_spec ticks_spec = {TB_UNIT_COUNT, 1, 1, 1000};
static const tb_unit_spec co_spec = {TB_UNIT_COUNT, 1, 1, INT64_MAX};
static const tb_unit_spec max_tags_spec = {TB_UNIT_COUNT, 1, 1, INT32_MAX};

/* A duration option into seconds. */
static bool parse_seconds(const char *name, const char *arg, double *seconds)
{
	int64_t ns;
	if (!tb_cli_unit(VERB, name, arg, &offset_spec, &ns))
		return false;
	*seconds = (double)ns / TB_UNIT_S;
	return true;
}

/* --start and --end: offsets from the log's base time, which may lie
 * before it (Java's -start takes negative values too). */
static bool parse_offset(const char *name, const char *arg, double *seconds)
{
	int64_t ns;
	if (arg[0] != '-' || tb_unit_parse(arg + 1, &offset_spec, &ns) < 0)
		return parse_seconds(name, arg, seconds); /* its error names the whole value */
	*seconds = -(double)ns / TB_UNIT_S;
	return true;
}

/* --start/--end: a wall-clock time (seconds since the epoch, *wall set), or
 * a duration after each file's StartTime. */
static bool parse_bound(const char *name, const char *arg, double *seconds, bool *wall)
{
	int64_t ns;
	*wall = tb_unit_parse_wallclock(arg, &ns) == 0;
	if (*wall) {
		*seconds = (double)ns / TB_UNIT_S;
		return true;
	}
	return parse_offset(name, arg, seconds);
}

static bool parse_warmup(const char *name, const char *arg, struct options *o)
{
	if (!strcmp(arg, "auto")) {
		o->warmup = WARMUP_AUTO;
		return true;
	}
	o->warmup = WARMUP_FIXED;
	return parse_seconds(name, arg, &o->warmup_s);
}

static int check_options(const struct options *o)
{
	if (o->tag && !tb_log_tag_valid(o->tag) && *o->tag) {
		tb_cli_error(VERB, "--tag '%s' is not a valid tag (no ',', space or newline)", o->tag);
		return -EINVAL;
	}
	if (o->start > o->end) {
		tb_cli_error(VERB, "--start %g s is after --end %g s: no interval can be selected", o->start,
			     o->end);
		return -EINVAL;
	}
	if (o->series && (o->format == FMT_HGRM || o->format == FMT_HGRM_CSV)) {
		tb_cli_error(VERB, "--series prints in text, csv or json, not in the hgrm formats");
		return -EINVAL;
	}
	if (o->schema_given && o->format != FMT_PROM_NATIVE) {
		tb_cli_error(VERB, "--schema goes with --format prom-native");
		return -EINVAL;
	}
	if (o->format == FMT_PROM_NATIVE && (o->series || o->plot_dir)) {
		tb_cli_error(VERB, "--format prom-native prints buckets: no --series or --plot");
		return -EINVAL;
	}
	return 0;
}

int replay_parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"tag", required_argument, 0, 't'},       {"start", required_argument, 0, 's'},
		{"end", required_argument, 0, 'e'},       {"format", required_argument, 0, 'f'},
		{"output-log", required_argument, 0, 'o'}, {"digits", required_argument, 0, 'd'},
		{"unit-ratio", required_argument, 0, 'u'}, {"ticks", required_argument, 0, 'k'},
		{"warmup", required_argument, 0, 'w'},    {"series", no_argument, 0, 'S'},
		{"correct-co", required_argument, 0, 'c'}, {"plot", required_argument, 0, 'p'},
		{"schema", required_argument, 0, 'm'},    {"max-tags", required_argument, 0, 'T'},
		{"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0}};
	*o = (struct options){.start = -INFINITY, .end = INFINITY, .format = FMT_TEXT,
			      .schema = TB_PROM_SCHEMA_DEFAULT,
			      .digits = TB_LOG_MERGE_FIRST_LAYOUT, .unit_ratio = TB_HGRM_JAVA_UNIT_RATIO,
			      .ticks = TB_HGRM_DEFAULT_TICKS, .warmup = WARMUP_NONE,
			      .max_tags = MAX_TAGS_DEFAULT};
	int c, idx = 0;
	int64_t n = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		const char *name = longs[idx].name;
		bool ok = true;
		switch (c) {
		case 't': o->tag = optarg; break;
		case 's': ok = parse_bound(name, optarg, &o->start, &o->start_wall); break;
		case 'e': ok = parse_bound(name, optarg, &o->end, &o->end_wall); break;
		case 'f':
			if (!strcmp(optarg, "text")) o->format = FMT_TEXT;
			else if (!strcmp(optarg, "json")) o->format = FMT_JSON;
			else if (!strcmp(optarg, "csv")) o->format = FMT_CSV;
			else if (!strcmp(optarg, "hgrm")) o->format = FMT_HGRM;
			else if (!strcmp(optarg, "hgrm-csv")) o->format = FMT_HGRM_CSV;
			else if (!strcmp(optarg, "prom-native")) o->format = FMT_PROM_NATIVE;
			else {
				tb_cli_bad_value(VERB, name, optarg,
						 "want text, json, csv, hgrm, hgrm-csv or prom-native");
				ok = false;
			}
			break;
		case 'o': o->output_log = optarg; break;
		case 'd':
			ok = tb_cli_unit(VERB, name, optarg, &digits_spec, &n);
			o->digits = (int)n;
			break;
		case 'u':
			if (!tb_cli_parse_double(optarg, &o->unit_ratio) || o->unit_ratio <= 0) {
				tb_cli_bad_value(VERB, name, optarg, "want a number above 0");
				ok = false;
			}
			break;
		case 'k':
			ok = tb_cli_unit(VERB, name, optarg, &ticks_spec, &n);
			o->ticks = (int)n;
			break;
		case 'w': ok = parse_warmup(name, optarg, o); break;
		case 'S': o->series = true; break;
		case 'c': ok = tb_cli_unit(VERB, name, optarg, &co_spec, &o->co_interval); break;
		case 'p': o->plot_dir = optarg; break;
		case 'm':
			if (!tb_cli_parse_i64(optarg, &n) || n < TB_PROM_SCHEMA_MIN || n > TB_PROM_SCHEMA_MAX) {
				tb_cli_bad_value(VERB, name, optarg, "a schema is %d..%d",
						 TB_PROM_SCHEMA_MIN, TB_PROM_SCHEMA_MAX);
				ok = false;
			}
			o->schema = (int)n;
			o->schema_given = true;
			break;
		case 'T':
			ok = tb_cli_unit(VERB, name, optarg, &max_tags_spec, &n);
			o->max_tags = (size_t)n;
			break;
		default:
			return tb_cli_common_option(VERB, c, argv, usage);
		}
		if (!ok)
			return -EINVAL;
	}
	if (optind >= argc) {
		tb_cli_error(VERB, "no log file given");
		usage(stderr);
		return -EINVAL;
	}
	return check_options(o);
}
