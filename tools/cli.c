/* cli.c - shared helpers for the `tailbus` verbs (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void tb_cli_error(const char *verb, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "tailbus %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
