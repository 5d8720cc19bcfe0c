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

#define BAD 0xff

static uint8_t sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (uint8_t)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (uint8_t)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (uint8_t)(c - '0' + 52);
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return BAD;
}

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

int tb_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
	if (n % 4 != 0)
		return -EINVAL;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		int pad = 0;
		uint32_t w = 0;
		for (int k = 0; k < 4; k++) {
			char c = in[i + k];
			if (c == '=' && last && k >= 2) {
				pad++;
				w <<= 6;
				continue;
			}
			uint8_t s = sextet(c);
			if (s == BAD || pad)
				return -EINVAL;
			w = (w << 6) | s;
		}
		size_t bytes = 3 - (size_t)pad;
		if (o + bytes > cap)
			return -ENOSPC;
		out[o++] = (uint8_t)(w >> 16);
		if (bytes > 1)
			out[o++] = (uint8_t)(w >> 8);
		if (bytes > 2)
			out[o++] = (uint8_t)w;
	}
	*len = o;
	return 0;
}
