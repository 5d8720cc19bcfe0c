/* prom_accept.c - content negotiation for `tailbus export` (tailbus/prom.h).
 *
 * tb_prom_accepts_protobuf reads a client's Accept header, untrusted text:
 * it only scans the bytes it is given up to their NUL, copies nothing, and
 * any media range it cannot read is simply not a protobuf request. Ranges
 * are read one at a time, so what one range holds cannot change how the next
 * is read (fuzz_accept checks it).
 */
#include "tailbus/prom.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Content negotiation. A media range is "type/subtype *(; param=value)",
 * ranges separated by commas. */
#define PB_MEDIA "application/vnd.google.protobuf"
#define PB_PROTO "io.prometheus.client.MetricFamily"
#define PB_ENCODING "delimited"

static const char *skip_space(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* The token [s, end) without surrounding blanks or quotes equals `want`. */
static bool token_is(const char *s, const char *end, const char *want)
{
	s = skip_space(s, end);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end - s >= 2 && *s == '"' && end[-1] == '"') {
		s++;
		end--;
	}
	size_t n = strlen(want);
	return (size_t)(end - s) == n && strncasecmp(s, want, n) == 0;
}

/* One media range [s, end): the protobuf type with both parameters and q > 0. */
static bool range_is_protobuf(const char *s, const char *end)
{
	const char *semi = memchr(s, ';', (size_t)(end - s));
	if (!token_is(s, semi ? semi : end, PB_MEDIA))
		return false;
	bool proto = false, encoding = false, refused = false;
	while (semi) {
		const char *p = semi + 1;
		semi = memchr(p, ';', (size_t)(end - p));
		const char *pend = semi ? semi : end;
		const char *eq = memchr(p, '=', (size_t)(pend - p));
		if (!eq)
			continue;
		if (token_is(p, eq, "proto"))
			proto = token_is(eq + 1, pend, PB_PROTO);
		else if (token_is(p, eq, "encoding"))
			encoding = token_is(eq + 1, pend, PB_ENCODING);
		else if (token_is(p, eq, "q"))
			refused = strtod(skip_space(eq + 1, pend), NULL) <= 0; /* stops at , or ; */
	}
	return proto && encoding && !refused;
}

bool tb_prom_accepts_protobuf(const char *accept)
{
	if (!accept)
		return false;
	const char *s = accept, *end = accept + strlen(accept);
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *rend = comma ? comma : end;
		if (range_is_protobuf(s, rend))
			return true;
		s = rend + (comma ? 1 : 0);
	}
	return false;
}
