/* tailbus.c - the `tailbus` command: one binary, one verb per concern.
 *
 * Each verb lives in its own file (replay.c, ...) and is reached through the
 * table below, so adding a verb is one line here and one file.
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
	{"replay", tb_cmd_replay, "read interval logs: merge, summarise, print percentiles, rewrite"},
	{"model", tb_cmd_model, "coordinated omission in a FIFO server model: closed vs open loop"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: tailbus <verb> [options]\n\nverbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(out, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(out, "\n'tailbus <verb> --help' describes a verb.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? TB_EXIT_USAGE : TB_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (!strcmp(argv[1], verbs[i].name))
			return verbs[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "tailbus: unknown verb '%s'\n", argv[1]);
	usage(stderr);
	return TB_EXIT_USAGE;
}
