/* tailbus.c - the `tailbus` command: one binary, one verb per concern.
 *
 * Each verb lives in its own file (compare.c, ...) or folder (replay/, ...)
 * and is reached through the table below, so adding a verb is one line here
 * and its file.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct verb verbs[] = {
	{"top", tb_cmd_top, "live percentiles per metric from a bus (or a growing log)"},
	{"load", tb_cmd_load, "open-loop load generator and reference engine, recording through a bus"},
	{"replay", tb_cmd_replay, "read interval logs: merge, summarise, print percentiles, rewrite"},
	{"export", tb_cmd_export, "serve the buses' live histograms to Prometheus (/metrics)"},
	{"compare", tb_cmd_compare, "compare two sets of runs, percentile by percentile, with their spread"},
	{"model", tb_cmd_model, "coordinated omission in a FIFO server model: closed vs open loop"},
	{"clock", tb_cmd_clock, "clock sources, their cost and resolution, and a recommendation"},
	{"env", tb_cmd_env, "the machine, kernel and build a measurement was taken on"},
	{"ls", tb_cmd_ls, "the buses in a directory, their collector and producers; stale ones removed"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: tailbus <verb> [options]\n\nverbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(out, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(out, "\n'tailbus <verb> --help' describes a verb; --version prints the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? TB_EXIT_USAGE : TB_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		tb_cli_version();
		return TB_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (!strcmp(argv[1], verbs[i].name))
			return verbs[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "tailbus: unknown verb '%s'\n", argv[1]);
	usage(stderr);
	return TB_EXIT_USAGE;
}
