/* cli.c - shared helpers for the `tailbus` verbs (see cli.h): sentences on
 * stderr, strict parsing, and log text made safe for a terminal or JSON. */
#include "cli.h"

#include "tailbus/env.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ESCAPE_BELOW 0x20 /* C0 control characters */
#define ESCAPE_DEL 0x7f
#define ERROR_MAX 4096    /* one message; a longer one ends in "..." */
#define ESCAPED_WIDTH 4   /* "\xNN" */

/* Text from a log (a tag, a field, an env value) may hold any byte: control
 * bytes (C0 and DEL) are written as \xNN, so a log cannot move the cursor,
 * set the title or end the line on the user's terminal. Bytes from 0x80 up
 * are left alone: they may be UTF-8. */
static bool needs_escape(unsigned char ch)
{
	return ch < ESCAPE_BELOW || ch == ESCAPE_DEL;
}

size_t tb_cli_escape(char *buf, size_t cap, const char *s, size_t n)
{
	size_t o = 0;
	if (cap == 0)
		return 0;
	/* room for the widest form of one byte and the NUL */
	for (size_t i = 0; i < n && o + ESCAPED_WIDTH < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (needs_escape(ch))
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o] = '\0';
	return o;
}

const char *tb_cli_text(char *buf, size_t cap, const char *s)
{
	tb_cli_escape(buf, cap, s, strlen(s));
	return buf;
}

/* s[0..n) escaped, a piece at a time. */
void tb_cli_put_text(FILE *out, const char *s, size_t n)
{
	enum { PIECE = 64 };
	char buf[TB_CLI_ESCAPED_MAX(PIECE)];
	for (size_t i = 0; i < n; i += PIECE) {
		tb_cli_escape(buf, sizeof(buf), s + i, n - i < PIECE ? n - i : PIECE);
		fputs(buf, out);
	}
}

void tb_cli_error(const char *verb, const char *fmt, ...)
{
	char msg[ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	fprintf(stderr, "tailbus %s: ", verb);
	tb_cli_put_text(stderr, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	if ((size_t)n >= sizeof(msg))
		fputs("...", stderr);
	fputc('\n', stderr);
}

void tb_cli_bad_value(const char *verb, const char *opt, const char *arg, const char *why_fmt, ...)
{
	va_list ap;
	fprintf(stderr, "tailbus %s: bad value '%s' for --%s: ", verb, arg, opt);
	va_start(ap, why_fmt);
	vfprintf(stderr, why_fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool tb_cli_unit(const char *verb, const char *opt, const char *arg, const tb_unit_spec *spec,
		 int64_t *out)
{
	char why[128];
	if (tb_unit_parse_why(arg, spec, out, why, sizeof(why)) == 0)
		return true;
	tb_cli_bad_value(verb, opt, arg, "%s", why);
	return false;
}

void tb_cli_bad_option(const char *verb, int c, const char *arg, void (*usage)(FILE *out))
{
	const char *eq = strchr(arg, '=');
	if (c == ':')
		tb_cli_error(verb, "option '%s' needs a value", arg);
	else if (optopt && eq && !strncmp(arg, "--", 2))
		tb_cli_error(verb, "option '%.*s' takes no value", (int)(eq - arg), arg);
	else if (optopt && strncmp(arg, "--", 2))
		tb_cli_error(verb, "unknown option '-%c'", optopt);
	else
		tb_cli_error(verb, "unknown option '%s'", arg);
	if (c == '?' && usage)
		usage(stderr);
}

int tb_cli_common_option(const char *verb, int c, char **argv, void (*usage)(FILE *out))
{
	if (c == 'h') {
		usage(stdout);
		return 1;
	}
	if (c == 'V') {
		tb_cli_version();
		return 1;
	}
	tb_cli_bad_option(verb, c, argv[optind - 1], usage);
	return -EINVAL;
}

void tb_cli_version(void)
{
	printf("tailbus %s\n", tb_version());
}

bool tb_cli_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v))
		return false;
	*out = v;
	return true;
}

bool tb_cli_parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = v;
	return true;
}

void tb_cli_env_line(FILE *out)
{
	tb_env e;
	tb_env_collect(&e);
	fprintf(out, "measured on: %s, kernel %s, %s x %s, clocksource %s, tailbus %s (%s)\n",
		tb_env_get(&e, "hostname"), tb_env_get(&e, "kernel"), tb_env_get(&e, "cpu_model"),
		tb_env_get(&e, "cpus"), tb_env_get(&e, "clocksource"), tb_env_get(&e, "version"),
		tb_env_get(&e, "commit"));
}

void tb_cli_env_json(FILE *out)
{
	tb_env e;
	tb_env_collect(&e);
	fprintf(out, "\"env\":");
	tb_env_format_json(&e, out);
}

bool tb_cli_no_operands(const char *verb, int argc, char **argv)
{
	if (optind >= argc)
		return true;
	tb_cli_error(verb, "unexpected argument '%s'", argv[optind]);
	return false;
}

void tb_cli_fmt_ns(char *buf, size_t cap, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, cap, "%.2f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, cap, "%.2f us", ns / 1e3);
	else
		snprintf(buf, cap, "%.0f ns", ns);
}
