/* javafmt.c - fixed-point formatting of doubles with Java's rounding.
 *
 * java.util.Formatter prints "%.Nf" from the shortest decimal digits that
 * identify the double (its Double.toString digits) and rounds those digits
 * half-up. We find the same digits by asking printf for 1, 2, ... 17
 * significant digits until the text parses back to the same double, then round
 * the digit string ourselves. Only the rounding of exact ties differs from C,
 * but a .hgrm file that differs in one digit is a different file.
 */
#include "tailbus/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A double never needs more than 17 significant digits to round-trip. */
#define MAX_SIG_DIGITS 17
#define MAX_FRAC_DIGITS 40

/* Shortest digits: writes the digit string (no point, no sign) and returns the
 * decimal exponent e such that |v| = 0.DIGITS x 10^e. */
static int shortest_digits(double v, char *digits, int *ndigits)
{
	char tmp[64];
	for (int prec = 1; prec <= MAX_SIG_DIGITS; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v || prec == MAX_SIG_DIGITS)
			break;
	}
	/* tmp is "d.ddddde[+-]XX" */
	int n = 0;
	char *p = tmp;
	for (; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	}
	int exp10 = atoi(p + 1);
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*ndigits = n;
	return exp10 + 1;
}

int tb_fmt_java_fixed(char *buf, size_t cap, double v, int width, int frac)
{
	if (isnan(v))
		return snprintf(buf, cap, "%*s", width, "NaN");
	if (isinf(v))
		return snprintf(buf, cap, "%*s", width, v < 0 ? "-Infinity" : "Infinity");
	if (frac > MAX_FRAC_DIGITS)
		frac = MAX_FRAC_DIGITS;
	bool neg = signbit(v);
	char digits[MAX_SIG_DIGITS + 2];
	int nd = 0, e = 0;
	if (v == 0.0) {
		digits[0] = '0';
		nd = 1;
		e = 1;
	} else {
		e = shortest_digits(fabs(v), digits, &nd);
	}
	/* Integer part has max(e, 0) digits; keep e + frac digits of the string. */
	int keep = e + frac;
	/* digit i (0-based) of the value, in a buffer wide enough for a carry */
	char out[MAX_SIG_DIGITS + MAX_FRAC_DIGITS + 400];
	int int_digits = e > 0 ? e : 0;
	int total = int_digits + frac; /* digits printed, before a carry */
	/* value digit at position k from the left of the integer part */
	for (int k = 0; k < total; k++) {
		int src = k - (int_digits - e); /* index into digits */
		out[k + 1] = (src >= 0 && src < nd) ? digits[src] : '0';
	}
	out[0] = '0';
	if (keep >= 0 && keep < nd && digits[keep] >= '5') {
		int k = total;
		while (k >= 0) {
			if (out[k] == '9') {
				out[k--] = '0';
				continue;
			}
			out[k]++;
			break;
		}
	} else if (keep < 0) {
		/* everything rounds to zero */
	}
	/* assemble: optional carry digit, integer part, point, fraction */
	char text[sizeof(out) + 4];
	int t = 0;
	if (neg)
		text[t++] = '-';
	int start = out[0] != '0' ? 0 : 1;
	if (int_digits == 0 && start == 1)
		text[t++] = '0';
	for (int k = start; k <= int_digits; k++)
		text[t++] = out[k];
	if (frac > 0) {
		text[t++] = '.';
		for (int k = int_digits + 1; k <= total; k++)
			text[t++] = out[k];
	}
	text[t] = '\0';
	return snprintf(buf, cap, "%*s", width, text);
}
