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

/* A character's sextet, or -1 outside the alphabet: a constant expression,
 * so the tables below are built by the compiler. */
#define SEXTET(c)                                                                       \
	((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'                                         \
	 : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26                                    \
	 : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52                                    \
	 : (c) == '+'               ? 62                                                \
	 : (c) == '/'               ? 63                                                \
				    : -1)
#define EACH4(f, c) f(c), f((c) + 1), f((c) + 2), f((c) + 3)
#define EACH16(f, c) EACH4(f, c), EACH4(f, (c) + 4), EACH4(f, (c) + 8), EACH4(f, (c) + 12)
#define EACH64(f, c) EACH16(f, c), EACH16(f, (c) + 16), EACH16(f, (c) + 32), EACH16(f, (c) + 48)
#define EACH256(f) {EACH64(f, 0), EACH64(f, 64), EACH64(f, 128), EACH64(f, 192)}

/* The value of each character plus one; 0 marks a character outside the
 * alphabet. Used for the last group, where '=' may appear. */
#define PLUS_ONE(c) ((uint8_t)(SEXTET(c) + 1))
static const uint8_t sextet_plus_one[256] = EACH256(PLUS_ONE);

/* The whole groups, most of what a replay reads: for each of a group's four
 * positions, every character's sextet already shifted to its place in the
 * group's three bytes as they lie in memory (byte 0 first), so a group is
 * four lookups ORed together and one 4-byte store. A character outside the
 * alphabet gives bit 31 instead, which three bytes never reach: one test
 * after the loop checks the whole text.  Group bits: aaaaaabb bbbbcccc ccdddddd */
#define BAD_SEXTET 0x80000000u
#define SX(c) ((uint32_t)SEXTET(c) & 63u)
#define PUT(c, expr) (SEXTET(c) < 0 ? BAD_SEXTET : (expr))
#define AT0(c) PUT(c, SX(c) << 2)
#define AT1(c) PUT(c, SX(c) >> 4 | (SX(c) & 0xf) << 12)
#define AT2(c) PUT(c, (SX(c) >> 2) << 8 | (SX(c) & 0x3) << 22)
#define AT3(c) PUT(c, SX(c) << 16)
static const uint32_t group_table[4][256] = {EACH256(AT0), EACH256(AT1), EACH256(AT2),
					     EACH256(AT3)};

static inline uint32_t group_bytes(const unsigned char *c)
{
	return group_table[0][c[0]] | group_table[1][c[1]] | group_table[2][c[2]] |
	       group_table[3][c[3]];
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
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
	const unsigned char *c = (const unsigned char *)in;
	/* all but the last group; a 4-byte store writes one byte past its
	 * group's three, so a group that ends the buffer is stored bytewise */
	size_t whole = groups - 1, g = 0;
	size_t fast = whole > 0 && whole * 3 == cap ? whole - 1 : whole;
	uint32_t bad = 0;
	for (; g + 1 < fast; g += 2, c += 8, o += 6) {
		uint32_t w0 = group_bytes(c), w1 = group_bytes(c + 4);
		bad |= w0 | w1;
		put_le32(out + o, w0);
		put_le32(out + o + 3, w1);
	}
	for (; g < whole; g++, c += 4, o += 3) {
		uint32_t w = group_bytes(c);
		bad |= w;
		if (g < fast) {
			put_le32(out + o, w);
		} else {
			out[o] = (uint8_t)w;
			out[o + 1] = (uint8_t)(w >> 8);
			out[o + 2] = (uint8_t)(w >> 16);
		}
	}
	if (bad & BAD_SEXTET) /* '=' included: padding only ends the text */
		return -EINVAL;
	int rc = decode_last(in + n - 4, out, cap, &o);
	if (rc < 0)
		return rc;
	*len = o;
	return 0;
}
