/* env.c - `tailbus env`: the machine, kernel and build a measurement ran on.
 *
 *   tailbus env [--json | --header]
 *
 * Prints what tb_env_collect() finds (tailbus/env.h): one "key value" line
 * per field, one JSON object, or the '#[env key=value]' lines that go into
 * the header of every log tailbus writes (--header, for a script to put
 * before the legend line of a log some other tool wrote).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tailbus/env.h"

#define VERB "env"

enum format { FMT_TEXT, FMT_JSON, FMT_HEADER };

static void usage(FILE *out)
{
	fprintf(out, "usage: tailbus env [--json | --header] [--version]\n"
		     "Prints the machine, kernel and command line, CPU model and count, governor,\n"
		     "isolated CPUs, huge pages, THP, clocksource, compiler, version and commit.\n"
		     "Anything that cannot be read shows as 'unknown'. --header prints them as\n"
		     "interval-log header lines (each under 128 bytes), to go before the legend.\n");
}

static int print(const tb_env *e, enum format format)
{
	char header[TB_ENV_HEADER_CAP];
	int rc;
	switch (format) {
	case FMT_JSON:
		rc = tb_env_format_json(e, stdout);
		putchar('\n');
		return rc;
	case FMT_HEADER:
		rc = tb_env_format_header_lines(e, header, sizeof(header));
		if (rc >= 0)
			fputs(header, stdout);
		return rc;
	case FMT_TEXT: break;
	}
	return tb_env_format_text(e, stdout);
}

int tb_cmd_env(int argc, char **argv)
{
	static const struct option longs[] = {
		{"json", no_argument, 0, 'j'},
		{"header", no_argument, 0, 'H'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0}};
	enum format format = FMT_TEXT;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'j': format = FMT_JSON; break;
		case 'H': format = FMT_HEADER; break;
		case 'h': usage(stdout); return TB_EXIT_OK;
		case 'V': tb_cli_version(); return TB_EXIT_OK;
		default:
			tb_cli_bad_option(VERB, c, argv[optind - 1]);
			if (c == '?')
				usage(stderr);
			return TB_EXIT_USAGE;
		}
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	tb_env e;
	tb_env_collect(&e);
	int rc = print(&e, format);
	if (rc < 0 || fflush(stdout) != 0) {
		tb_cli_error(VERB, "cannot write the output: %s", strerror(rc < 0 ? -rc : errno));
		return TB_EXIT_INPUT;
	}
	return TB_EXIT_OK;
}
