/* cli.h - what every `tailbus` verb shares: error sentences and strict parsing.
 *
 * Library functions return negative errnos and never print; a verb turns each
 * into one sentence on stderr that names the file, line or option at fault.
 */
#ifndef TAILBUS_TOOLS_CLI_H
#define TAILBUS_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "tailbus/units.h"

/* Exit statuses: 0 all good; 1 a problem with some input (output still
 * printed from everything that was good); 2 bad usage. */
#define TB_EXIT_OK 0
#define TB_EXIT_INPUT 1
#define TB_EXIT_USAGE 2

void tb_cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "tailbus VERB: bad value 'ARG' for --OPT: WHY", every option's refusal; `opt`
 * without its dashes. */
void tb_cli_bad_value(const char *verb, const char *opt, const char *arg, const char *why_fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* ARG as `spec` says (tailbus/units.h: durations, sizes, counts, with their
 * bounds); false, after the bad-value sentence with its reason, if refused. */
bool tb_cli_unit(const char *verb, const char *opt, const char *arg, const tb_unit_spec *spec,
		 int64_t *out);
/* What getopt_long (optstring ":", opterr 0) returned for a bad option, as
 * one sentence: `c` is ':' (a value missing) or '?' (an unknown option, or a
 * flag given a value); `arg` is argv[optind - 1]. After an unknown option,
 * not after a missing value, `usage` (when not NULL) prints the verb's usage
 * on stderr. */
void tb_cli_bad_option(const char *verb, int c, const char *arg, void (*usage)(FILE *out));
/* What a verb's getopt switch leaves to its default case: --help (its usage
 * on stdout) and --version print and give 1 (the verb then exits 0);
 * anything else is refused as tb_cli_bad_option says and gives -EINVAL. */
int tb_cli_common_option(const char *verb, int c, char **argv, void (*usage)(FILE *out));
/* --version: "tailbus VERSION" on stdout (the same for every verb). */
void tb_cli_version(void);
/* True when getopt left no operand; else one sentence naming the first. */
bool tb_cli_no_operands(const char *verb, int argc, char **argv);
/* A duration for a report: "850 ns", "12.34 us", "1.50 ms", "2.00 s". */
void tb_cli_fmt_ns(char *buf, size_t cap, double ns);
/* Whole-string number parsing: false on junk, empty or out-of-range text. */
bool tb_cli_parse_double(const char *s, double *out);
bool tb_cli_parse_i64(const char *s, int64_t *out);

/* Text taken from a log (tags, env values, comments) for a terminal, in
 * every text format: control bytes (C0 and DEL) as \xNN, as tb_cli_error
 * writes them, so a log cannot drive the terminal. tb_cli_escape writes
 * s[0..n) into buf (NUL-terminated; what does not fit is left off) and
 * returns the length; with cap TB_CLI_ESCAPED_MAX(n) everything fits.
 * tb_cli_text does it for a string and returns buf, for a "%s";
 * tb_cli_put_text writes s[0..n) escaped to out, whatever its length. */
#define TB_CLI_ESCAPED_MAX(n) (4 * (n) + 1)
size_t tb_cli_escape(char *buf, size_t cap, const char *s, size_t n);
const char *tb_cli_text(char *buf, size_t cap, const char *s);
void tb_cli_put_text(FILE *out, const char *s, size_t n);
/* The machine a report was made on: one line, or a JSON member "env":{...}. */
void tb_cli_env_line(FILE *out);
void tb_cli_env_json(FILE *out);

int tb_cmd_replay(int argc, char **argv);
int tb_cmd_model(int argc, char **argv);
int tb_cmd_top(int argc, char **argv);
int tb_cmd_load(int argc, char **argv);
int tb_cmd_compare(int argc, char **argv);
int tb_cmd_clock(int argc, char **argv);
int tb_cmd_env(int argc, char **argv);
int tb_cmd_ls(int argc, char **argv);
int tb_cmd_export(int argc, char **argv);

#endif
