/* base64.c - RFC 4648 base64 with the standard alphabet and '=' padding.
 *
 * Interval logs carry each histogram frame as one base64 token with no line
 * breaks. The decoder is strict: every character must be in the alphabet,
 * the length must be a multiple of four, and padding may only end the text,
 * so a truncated or corrupted payload is refused instead of half-read.
 */
#include "tailbus/codec.h"

#include <errno.h>

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The value of each alphabet character plus one; 0 marks a character outside
 * the alphabet, so one table lookup both decodes and checks (a log line's
 * payload is most of what a replay reads). */
static const uint8_t sextet_plus_one[256] = {
	['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7, ['H'] = 8,
	['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15,
	['P'] = 16, ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22,
	['W'] = 23, ['X'] = 24, ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29,
	['d'] = 30, ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36,
	['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42, ['q'] = 43,
	['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49, ['x'] = 50,
	['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56, ['4'] = 57,
	['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64
};

size_t tb_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

size_t tb_base64_decoded_bound(size_t n)
{
	return n / 4 * 3;
}

int tb_base64_encode(const uint8_t *in, size_t n, char *out, size_t cap, size_t *len)
{
	size_t need = tb_base64_encoded_len(n);
	if (cap < need + 1)
		return -ENOSPC;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			w |= in[i + 2];
		out[o++] = alphabet[(w >> 18) & 63];
		out[o++] = alphabet[(w >> 12) & 63];
		out[o++] = i + 1 < n ? alphabet[(w >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? alphabet[w & 63] : '=';
	}
	out[o] = '\0';
	*len = o;
	return 0;
}

/* The last group of four may end in one or two '='. */
static int decode_last(const char *in, uint8_t *out, size_t cap, size_t *o)
{
	int pad = in[3] == '=' ? (in[2] == '=' ? 2 : 1) : 0;
	uint32_t w = 0;
	for (int k = 0; k < 4 - pad; k++) {
		uint8_t s = sextet_plus_one[(unsigned char)in[k]];
		if (!s)
			return -EINVAL;
		w = (w << 6) | (uint32_t)(s - 1);
	}
	w <<= 6 * pad;
	size_t bytes = 3 - (size_t)pad;
	if (*o + bytes > cap)
		return -ENOSPC;
	out[(*o)++] = (uint8_t)(w >> 16);
	if (bytes > 1)
		out[(*o)++] = (uint8_t)(w >> 8);
	if (bytes > 2)
		out[(*o)++] = (uint8_t)w;
	return 0;
}

int tb_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
	if (n % 4 != 0)
		return -EINVAL;
	size_t groups = n / 4, o = 0;
	if (groups == 0) {
		*len = 0;
		return 0;
	}
	if ((groups - 1) * 3 > cap)
		return -ENOSPC;
	for (size_t g = 0; g + 1 < groups; g++) {
		const unsigned char *c = (const unsigned char *)in + 4 * g;
		uint8_t a = sextet_plus_one[c[0]], b = sextet_plus_one[c[1]];
		uint8_t d = sextet_plus_one[c[2]], e = sextet_plus_one[c[3]];
		if (!a || !b || !d || !e) /* '=' included: padding only ends the text */
			return -EINVAL;
		uint32_t w = (uint32_t)(a - 1) << 18 | (uint32_t)(b - 1) << 12 |
			     (uint32_t)(d - 1) << 6 | (uint32_t)(e - 1);
		out[o++] = (uint8_t)(w >> 16);
		out[o++] = (uint8_t)(w >> 8);
		out[o++] = (uint8_t)w;
	}
	int rc = decode_last(in + n - 4, out, cap, &o);
	if (rc < 0)
		return rc;
	*len = o;
	return 0;
}
