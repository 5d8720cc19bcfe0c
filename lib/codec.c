/* codec.c - V2 (and V1) HdrHistogram payloads: encode, compress, decode.
 *
 * Encoding walks the counts from index 0 to the index of the maximum and
 * writes each as a ZigZag LEB128-64b9B word, folding a run of k >= 2 zeros
 * into the single word -k (a lone zero stays 0, as Java writes it). The inner
 * buffer's header records the payload length exactly, so a decoder can tell a
 * truncated stream from a complete one.
 *
 * Decoding is the only place bytes from other programs enter a histogram, so
 * it checks everything before use: cookies, the zlib length against the input,
 * the inflated size against the declared payload length, the layout (S, L, H)
 * against the histogram limits, and every count and zero run against the
 * counts length. Any failure leaves a static sentence in *why.
 */
#include "tailbus/codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
/* TB_NO_SIMD: the portable code everywhere (tests build it on x86-64 too) */
#if defined(__SSE2__) && defined(__x86_64__) && !defined(TB_NO_SIMD)
#define TB_SAD_BYTES 1
#include <emmintrin.h>
#endif
#include <zlib.h>

#define COOKIE_BASE(c) ((c) & ~UINT32_C(0xf0))
#define V0_INNER_BASE 0x1c849308u
#define V0_COMPRESSED_BASE 0x1c849309u
#define V1_INNER_BASE 0x1c849301u
#define V1_COMPRESSED_BASE 0x1c849302u
#define V2_INNER_BASE 0x1c849303u
#define V2_COMPRESSED_BASE 0x1c849304u
/* Java's DoubleHistogram wraps an integer histogram in a frame of its own
 * (cookie, digits, value range); its values are doubles of no fixed unit,
 * which integer nanosecond histograms cannot take. Named to be refused so. */
#define DOUBLE_HISTOGRAM_INNER_COOKIE 0x0c72124eu
#define DOUBLE_HISTOGRAM_COMPRESSED_COOKIE 0x0c72124fu
#define DOUBLE_HISTOGRAM_REFUSAL "DoubleHistogram payloads are not supported"
/* LEB128-64b9B: the first eight bytes carry 7 bits each, the ninth 8. */
#define LEB_SEVEN_BIT_BYTES 8

/* ---- big-endian helpers ---- */

static void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ---- ZigZag LEB128-64b9B ---- */

static size_t put_zigzag(uint8_t *p, int64_t value)
{
	uint64_t v = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
	size_t n = 0;
	while (n < LEB_SEVEN_BIT_BYTES) {
		if ((v >> 7) == 0) {
			p[n++] = (uint8_t)v;
			return n;
		}
		p[n++] = (uint8_t)((v & 0x7f) | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v; /* ninth byte: all eight remaining bits */
	return n;
}

/* Returns bytes consumed, or 0 when the word is truncated. */
static size_t get_zigzag_long(const uint8_t *p, size_t avail, int64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;
	for (;;) {
		if (n >= avail)
			return 0;
		uint8_t b = p[n];
		if (n == LEB_SEVEN_BIT_BYTES) {
			v |= (uint64_t)b << (7 * LEB_SEVEN_BIT_BYTES);
			n++;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << (7 * n);
		n++;
		if (!(b & 0x80))
			break;
	}
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return n;
}

/* Most words of a latency histogram are one byte (counts under 64, zero
 * runs under 64) or two: decode those inline, the rest out of line. */
static inline size_t get_zigzag(const uint8_t *p, size_t avail, int64_t *out)
{
	uint64_t v;
	size_t n;
	if (avail >= 1 && p[0] < 0x80) {
		v = p[0];
		n = 1;
	} else if (avail >= 2 && p[1] < 0x80) {
		v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		n = 2;
	} else {
		return get_zigzag_long(p, avail, out);
	}
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return n;
}

/* ---- encoding ---- */

static int32_t encoded_counts_len(const tb_hist *h)
{
	return tb_hist_index_of(h, h->max_raw) + 1;
}

size_t tb_v2_inner_bound(const tb_hist *h)
{
	return TB_V2_HEADER_SIZE + (size_t)TB_V2_MAX_WORD_SIZE * (size_t)h->counts_len;
}

size_t tb_v2_frame_bound(const tb_hist *h)
{
	return TB_V2_FRAME_HEADER_SIZE + compressBound((uLong)tb_v2_inner_bound(h));
}

static void put_header(const tb_hist *h, uint8_t *buf, uint32_t payload_len)
{
	uint64_t ratio_bits;
	memcpy(&ratio_bits, &h->conversion_ratio, sizeof(ratio_bits));
	put_be32(buf, TB_V2_ENCODING_COOKIE);
	put_be32(buf + 4, payload_len);
	put_be32(buf + 8, 0); /* normalizing index offset: always 0 */
	put_be32(buf + 12, (uint32_t)h->sig_digits);
	put_be64(buf + 16, (uint64_t)h->lowest);
	put_be64(buf + 24, (uint64_t)h->highest);
	put_be64(buf + 32, ratio_bits);
}

int tb_v2_encode_inner(const tb_hist *h, uint8_t *buf, size_t cap, size_t *len)
{
	int32_t limit = encoded_counts_len(h);
	if (cap < TB_V2_HEADER_SIZE + (size_t)TB_V2_MAX_WORD_SIZE * (size_t)limit)
		return -ENOSPC;
	size_t o = TB_V2_HEADER_SIZE;
	for (int32_t i = 0; i < limit;) {
		int64_t count = h->counts[i++];
		int64_t zeros = 0;
		if (count == 0) {
			zeros = 1;
			while (i < limit && h->counts[i] == 0) {
				zeros++;
				i++;
			}
		}
		o += put_zigzag(buf + o, zeros > 1 ? -zeros : count);
	}
	put_header(h, buf, (uint32_t)(o - TB_V2_HEADER_SIZE));
	*len = o;
	return 0;
}

/* One deflate stream per thread, reset between frames: zlib's state is about
 * 270 KiB, and allocating it for every frame (what compress2 does) costs
 * more than compressing a typical interval, because an allocation that size
 * is a fresh mapping whose pages fault in each time. The output is the same
 * bytes compress2 makes at that level. */
static __thread z_stream tls_zs;
static __thread int tls_zs_level = -2; /* -2: not initialised */

/* A thread that ends frees its stream: a key whose destructor ends it (the
 * key's value is the thread's own tls_zs). */
static pthread_key_t zs_key;
static pthread_once_t zs_key_once = PTHREAD_ONCE_INIT;
static int zs_key_rc = -1;

static void end_deflater(void *zs)
{
	deflateEnd(zs);
	tls_zs_level = -2;
}

static void make_zs_key(void)
{
	zs_key_rc = pthread_key_create(&zs_key, end_deflater);
}

static z_stream *deflater(int level)
{
	if (tls_zs_level == -2) {
		pthread_once(&zs_key_once, make_zs_key);
		memset(&tls_zs, 0, sizeof(tls_zs));
		if (deflateInit(&tls_zs, level) != Z_OK)
			return NULL;
		/* without the key the stream lives as long as the thread's
		 * memory: correct, only not freed when the thread ends */
		if (zs_key_rc == 0)
			(void)pthread_setspecific(zs_key, &tls_zs);
		tls_zs_level = level;
		return &tls_zs;
	}
	if (deflateReset(&tls_zs) != Z_OK)
		return NULL;
	if (level != tls_zs_level) {
		if (deflateParams(&tls_zs, level, Z_DEFAULT_STRATEGY) != Z_OK)
			return NULL;
		tls_zs_level = level;
	}
	return &tls_zs;
}

int tb_v2_compress(const uint8_t *inner, size_t inner_len, int level,
		   uint8_t *frame, size_t cap, size_t *len)
{
	if (cap < TB_V2_FRAME_HEADER_SIZE)
		return -ENOSPC;
	if (inner_len > UINT32_MAX || cap - TB_V2_FRAME_HEADER_SIZE > UINT32_MAX)
		return -EINVAL;
	z_stream *zs = deflater(level);
	if (!zs)
		return -EIO;
	zs->next_in = (Bytef *)(uintptr_t)inner;
	zs->avail_in = (uInt)inner_len;
	zs->next_out = frame + TB_V2_FRAME_HEADER_SIZE;
	zs->avail_out = (uInt)(cap - TB_V2_FRAME_HEADER_SIZE);
	int zrc = deflate(zs, Z_FINISH);
	if (zrc == Z_OK || zrc == Z_BUF_ERROR)
		return -ENOSPC; /* out of room before the end of the stream */
	if (zrc != Z_STREAM_END)
		return -EIO;
	size_t zlen = zs->total_out;
	put_be32(frame, TB_V2_COMPRESSED_COOKIE);
	put_be32(frame + 4, (uint32_t)zlen);
	*len = TB_V2_FRAME_HEADER_SIZE + zlen;
	return 0;
}

int tb_v2_encode_base64(const tb_hist *h, int level, char *out, size_t cap, size_t *len,
			uint8_t *scratch, size_t scratch_cap)
{
	size_t inner_cap = tb_v2_inner_bound(h);
	if (scratch_cap < inner_cap + tb_v2_frame_bound(h))
		return -ENOSPC;
	uint8_t *inner = scratch, *frame = scratch + inner_cap;
	size_t inner_len, frame_len;
	int rc = tb_v2_encode_inner(h, inner, inner_cap, &inner_len);
	if (rc == 0)
		rc = tb_v2_compress(inner, inner_len, level, frame, scratch_cap - inner_cap, &frame_len);
	if (rc == 0)
		rc = tb_base64_encode(frame, frame_len, out, cap, len);
	return rc;
}

/* ---- decoding ---- */

static int fail(const char **why, const char *sentence, int rc)
{
	if (why)
		*why = sentence;
	return rc;
}

/* Make `out` an empty histogram of the given layout, reusing its counts. */
static int prepare(tb_hist *out, int64_t lowest, int64_t highest, int sig_digits)
{
	if (out->counts && out->lowest == lowest && out->highest == highest &&
	    out->sig_digits == sig_digits) {
		tb_hist_reset(out);
		return 0;
	}
	tb_hist_free(out);
	return tb_hist_init(out, lowest, highest, sig_digits);
}

/* What a pass over V2 counts found: their sum, the first index above 0 and
 * the last index holding a non-zero count (-1: none). */
struct v2_scan {
	int64_t total;
	int32_t first;
	int32_t last;
};

/* Add (sign +1) or take back (-1) the counts of n bytes of words that all
 * decode, index for index; every non-zero count lies inside `counts` (a zero
 * count need not: walk_v2_counts passes them beyond what it adds into, so
 * they are skipped). Unsigned: taking back what walk_v2_counts added
 * restores each counter exactly. */
static void add_v2_counts(const uint8_t *p, size_t n, int64_t *counts, int sign)
{
	int64_t index = 0;
	for (size_t pos = 0; pos < n;) {
		int64_t v = 0;
		pos += get_zigzag(p + pos, n - pos, &v);
		if (v < 0) {
			index -= v;
		} else {
			/* a zero count may lie past what the walk added into */
			uint64_t d = sign > 0 ? (uint64_t)v : -(uint64_t)v;
			if (d)
				counts[index] = (int64_t)((uint64_t)counts[index] + d);
			index++;
		}
	}
}

#define BYTES(b) (0x0101010101010101u * (b))

/* The sums of the eight bytes of a and of b (SSE2's sum of absolute
 * differences against zero: one instruction for both). */
static inline void byte_sums(uint64_t a, uint64_t b, int64_t *sum_a, int64_t *sum_b)
{
#ifdef TB_SAD_BYTES
	__m128i s = _mm_sad_epu8(_mm_set_epi64x((long long)b, (long long)a), _mm_setzero_si128());
	*sum_a = _mm_cvtsi128_si64(s);
	*sum_b = _mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s));
#else
	uint64_t pa = (a & 0x00ff00ff00ff00ffu) + ((a >> 8) & 0x00ff00ff00ff00ffu);
	uint64_t pb = (b & 0x00ff00ff00ff00ffu) + ((b >> 8) & 0x00ff00ff00ff00ffu);
	*sum_a = (int64_t)((pa * 0x0001000100010001u) >> 48);
	*sum_b = (int64_t)((pb * 0x0001000100010001u) >> 48);
#endif
}

/* Eight one-byte words taken at once from `index`: their counts and zero
 * runs (length - 1), a byte each. */
struct v2_block {
	int64_t index;
	uint64_t cnts, runs;
};

/* Add the counts of eight one-byte words from `index`, known to end inside
 * `counts`: cnts holds each count word's count and runs each zero-run
 * word's length - 1 (a byte each, below 64, first word lowest). Word k lies
 * at index + k + the runs before it. With SSE2: prefix sums in 16-bit lanes
 * (at most 7 x 63), then eight independent adds (a zero-run word adds 0);
 * elsewhere, the same adds one word after another. */
#ifdef TB_SAD_BYTES
#define ADD_WORD(k)                                                                        \
	counts[index + _mm_extract_epi16(at, k)] =                                         \
		(int64_t)((uint64_t)counts[index + _mm_extract_epi16(at, k)] +               \
			  (uint64_t)_mm_extract_epi16(c, k))
static inline void add_block(uint64_t cnts, uint64_t runs, int64_t index, int64_t *counts)
{
	const __m128i zero = _mm_setzero_si128();
	__m128i p = _mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)runs), zero);
	p = _mm_add_epi16(p, _mm_slli_si128(p, 2));
	p = _mm_add_epi16(p, _mm_slli_si128(p, 4));
	p = _mm_add_epi16(p, _mm_slli_si128(p, 8)); /* runs of words 0..k */
	__m128i at = _mm_add_epi16(_mm_slli_si128(p, 2), _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7));
	__m128i c = _mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)cnts), zero);
	ADD_WORD(0);
	ADD_WORD(1);
	ADD_WORD(2);
	ADD_WORD(3);
	ADD_WORD(4);
	ADD_WORD(5);
	ADD_WORD(6);
	ADD_WORD(7);
}
#undef ADD_WORD
#else
static inline void add_block(uint64_t cnts, uint64_t runs, int64_t index, int64_t *counts)
{
	for (int k = 0; k < 8; k++, cnts >>= 8, runs >>= 8) {
		counts[index] = (int64_t)((uint64_t)counts[index] + (cnts & 0x7f));
		index += 1 + (int64_t)(runs & 0x7f);
	}
}
#endif

/* One pass over V2 counts against a layout of counts_len counters: every
 * word complete, every count and zero run inside the layout, the sum inside
 * int64_t; the errors, and their order, are those a decoder writing as it
 * goes would meet. With `counts`, each count is also added there as soon as
 * it is checked (unsigned), as long as its index is below add_len; the pass
 * returns 1 at the first that is not (the caller must grow first). Unless
 * it returns 0, whatever it added is taken back. */
static int walk_v2_counts(const uint8_t *p, size_t n, int32_t counts_len, int64_t *counts,
			  int64_t add_len, struct v2_scan *s, const char **why)
{
	/* locals, not *s: the count stores below could alias it */
	int64_t index = 0, total = 0, first = -1, last = -1;
	struct v2_block last_block = {0, 0, 0}; /* the last block with a count, if after `last` */
	int rc = 0;
	size_t pos = 0;
	while (pos < n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* Most words are one byte (small counts, short zero runs): eight
		 * of them are checked at once, once the first count is known (its
		 * rule is the byte loop's). The index only grows, so one that ends
		 * inside the layout kept every word inside it; a block that does
		 * not passes to the byte loop, which names the error. */
		if (first >= 0 && n - pos >= 8) {
			uint64_t w;
			memcpy(&w, p + pos, sizeof(w));
			if ((w & BYTES(0x80)) == 0) {
				uint64_t run = (w & BYTES(1)) * 0xff; /* 0xff on zero-run words */
				uint64_t mag = (w >> 1) & BYTES(0x7f);
				uint64_t runs = mag & run, cnts = mag & ~run; /* run: length - 1 */
				int64_t run_sum, cnt_sum, t;
				byte_sums(runs, cnts, &run_sum, &cnt_sum);
				int64_t end = index + 8 + run_sum;
				if (end <= counts_len && (!counts || end <= add_len) &&
				    !__builtin_add_overflow(total, cnt_sum, &t)) {
					total = t;
					if (counts)
						add_block(cnts, runs, index, counts);
					if (cnts) { /* where its last count lies: worked out once, at the end */
						last_block = (struct v2_block){index, cnts, runs};
					}
					index = end;
					pos += 8;
					continue;
				}
			}
		}
#endif
		int64_t v = 0;
		size_t used;
		if (p[pos] < 0x80) { /* most words: one byte */
			uint64_t u = p[pos];
			v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
			used = 1;
		} else if ((used = get_zigzag(p + pos, n - pos, &v)) == 0) {
			rc = fail(why, "counts: truncated LEB128 word", -EINVAL);
			break;
		}
		if (v < 0) {
			if (v < -(int64_t)counts_len || index - v > counts_len) {
				rc = fail(why, "counts: zero run past the counts length", -EINVAL);
				break;
			}
			index -= v;
			pos += used;
			continue;
		}
		if (index >= counts_len) {
			rc = fail(why, "counts: count past the counts length", -EINVAL);
			break;
		}
		if (v > 0) {
			if (__builtin_add_overflow(total, v, &total)) {
				rc = fail(why, "counts: total passes INT64_MAX", -EINVAL);
				break;
			}
			if (counts) {
				if (index >= add_len) {
					total -= v;
					rc = 1;
					break;
				}
				counts[index] = (int64_t)((uint64_t)counts[index] + (uint64_t)v);
			}
			if (first < 0 && index > 0)
				first = index;
			last = index;
			last_block.cnts = 0;
		}
		index++;
		pos += used;
	}
	if (last_block.cnts) {
		int k = (63 - __builtin_clzll(last_block.cnts)) / 8;
		uint64_t runs_before = last_block.runs & ((1ull << 8 * k) - 1);
		int64_t skipped, unused;
		byte_sums(runs_before, 0, &skipped, &unused);
		last = last_block.index + k + skipped;
	}
	*s = (struct v2_scan){total, (int32_t)first, (int32_t)last};
	if (rc != 0 && counts)
		add_v2_counts(p, pos, counts, -1);
	return rc;
}

/* Check V2 counts before anything is written. */
static int scan_v2_counts(const uint8_t *p, size_t n, int32_t counts_len, struct v2_scan *s,
			  const char **why)
{
	return walk_v2_counts(p, n, counts_len, NULL, 0, s, why);
}

/* Widen h's recorded extremes to the values a scan found counts for, as
 * recording those values would (min_raw tracks non-zero values only). */
static void note_scan(tb_hist *h, const struct v2_scan *s)
{
	if (s->last < 0)
		return;
	int64_t max = tb_hist_value_at_index(h, s->last);
	if (max > h->max_raw)
		h->max_raw = max;
	if (s->first >= 0) {
		int64_t min = tb_hist_value_at_index(h, s->first);
		if (h->min_raw == 0 || min < h->min_raw)
			h->min_raw = min;
	}
}

/* Into an empty histogram: check the whole stream first, then write, so a
 * malformed stream leaves nothing behind. */
static int decode_v2_counts(const uint8_t *p, size_t n, tb_hist *h, const char **why)
{
	struct v2_scan s;
	int rc = scan_v2_counts(p, n, h->counts_len, &s, why);
	if (rc < 0)
		return rc;
	add_v2_counts(p, n, h->counts, 1);
	h->total = s.total;
	note_scan(h, &s);
	return 0;
}

static int decode_fixed_counts(const uint8_t *p, size_t n, size_t word, tb_hist *h,
			       const char **why)
{
	if (n % word != 0)
		return fail(why, "counts: payload length is not a whole number of words", -EINVAL);
	if (n / word > (size_t)h->counts_len)
		return fail(why, "counts: more words than the counts length", -EINVAL);
	for (size_t i = 0; i < n / word; i++) {
		const uint8_t *w = p + i * word;
		int64_t c = word == 8 ? (int64_t)get_be64(w)
			  : word == 4 ? (int32_t)get_be32(w)
				      : (int16_t)((uint16_t)w[0] << 8 | w[1]);
		if (c < 0)
			return fail(why, "counts: negative count", -EINVAL);
		if (tb_hist_set_count_at_index(h, (int32_t)i, c) < 0)
			return fail(why, "counts: total passes INT64_MAX", -EINVAL);
	}
	return 0;
}

/* V1 word size comes from the cookie's size nibble (2, 4 or 8 bytes). */
static size_t v1_word_size(uint32_t cookie)
{
	return ((cookie & 0xf0) >> 4) & 0xe;
}

/* An inner buffer's header, checked. */
struct inner_header {
	uint32_t base; /* the cookie without its version bits */
	uint32_t payload_len;
	int32_t sig;
	int32_t counts_len;
	int64_t lowest, highest;
	uint64_t ratio_bits;
	size_t word; /* bytes per count; TB_V2_MAX_WORD_SIZE (at most) for V2 */
};

static int parse_inner_header(const uint8_t *buf, size_t len, struct inner_header *hd,
			      const char **why)
{
	if (len < TB_V2_HEADER_SIZE)
		return fail(why, "header: shorter than 40 bytes", -EINVAL);
	uint32_t cookie = get_be32(buf);
	hd->base = COOKIE_BASE(cookie);
	if (hd->base == V0_INNER_BASE)
		return fail(why, "cookie: V0 encoding is not supported", -ENOTSUP);
	if (hd->base != V2_INNER_BASE && hd->base != V1_INNER_BASE)
		return fail(why, "cookie: not an HdrHistogram encoding cookie", -EINVAL);
	hd->payload_len = get_be32(buf + 4);
	if (get_be32(buf + 8) != 0)
		return fail(why, "normalizing index offset: non-zero offsets are not supported", -ENOTSUP);
	hd->sig = (int32_t)get_be32(buf + 12);
	hd->lowest = (int64_t)get_be64(buf + 16);
	hd->highest = (int64_t)get_be64(buf + 24);
	hd->ratio_bits = get_be64(buf + 32);
	if (hd->payload_len != len - TB_V2_HEADER_SIZE)
		return fail(why, "payload length: does not match the bytes present", -EINVAL);
	hd->counts_len = tb_hist_counts_len(hd->lowest, hd->highest, hd->sig);
	if (hd->counts_len < 0)
		return fail(why, "layout: significant digits, lowest or highest value out of range", -EINVAL);
	hd->word = hd->base == V2_INNER_BASE ? TB_V2_MAX_WORD_SIZE : v1_word_size(cookie);
	if (hd->word != TB_V2_MAX_WORD_SIZE && hd->word != 2 && hd->word != 4 && hd->word != 8)
		return fail(why, "cookie: bad V1 word size", -EINVAL);
	/* a count needs at least one byte: cheap check before a large allocation */
	if (hd->payload_len > (uint64_t)hd->word * (uint64_t)hd->counts_len)
		return fail(why, "payload length: larger than the layout can hold", -EINVAL);
	return 0;
}

int tb_v2_decode_inner(const uint8_t *buf, size_t len, tb_hist *out, const char **why)
{
	struct inner_header hd;
	int rc = parse_inner_header(buf, len, &hd, why);
	if (rc < 0)
		return rc;
	if (prepare(out, hd.lowest, hd.highest, hd.sig) < 0)
		return fail(why, "out of memory", -ENOMEM);
	memcpy(&out->conversion_ratio, &hd.ratio_bits, sizeof(hd.ratio_bits));
	const uint8_t *counts = buf + TB_V2_HEADER_SIZE;
	rc = hd.base == V2_INNER_BASE ? decode_v2_counts(counts, hd.payload_len, out, why)
				      : decode_fixed_counts(counts, hd.payload_len, hd.word, out, why);
	if (rc < 0)
		tb_hist_reset(out);
	return rc;
}

/* The most payload bytes an inner header's layout can need, or a negative
 * errno with *why when the header is not a V1/V2 one with a valid layout. */
static int64_t payload_limit(const uint8_t *header, const char **why)
{
	uint32_t cookie = get_be32(header);
	uint32_t base = COOKIE_BASE(cookie);
	if (base == V0_INNER_BASE)
		return fail(why, "cookie: V0 encoding is not supported", -ENOTSUP);
	if (base != V2_INNER_BASE && base != V1_INNER_BASE)
		return fail(why, "cookie: not an HdrHistogram encoding cookie", -EINVAL);
	int32_t len = tb_hist_counts_len((int64_t)get_be64(header + 16),
					 (int64_t)get_be64(header + 24), (int32_t)get_be32(header + 12));
	if (len < 0)
		return fail(why, "layout: significant digits, lowest or highest value out of range", -EINVAL);
	size_t word = base == V2_INNER_BASE ? TB_V2_MAX_WORD_SIZE : v1_word_size(cookie);
	return (int64_t)word * len;
}

/* Inflating uses libdeflate, not zlib: a payload is one whole zlib stream
 * in memory, which is the case libdeflate is built for, and it inflates
 * the small streams of interval logs about twice as fast (replay inflates
 * every payload of a log; bench/java). The output is the same bytes and the
 * Adler-32 is checked all the same.
 *
 * Each thread keeps one decompressor and one output buffer: the inner
 * buffer handed back lives there, valid until the thread's next inflate. */
static __thread struct libdeflate_decompressor *tls_dd;
static __thread uint8_t *tls_out;
static __thread size_t tls_out_cap;
static __thread uint8_t *tls_frame; /* inflate_base64's, below */
static __thread size_t tls_frame_cap;

/* A thread that ends frees its decompressor and buffers, as its deflate
 * stream is freed: a key whose destructor runs in the ending thread, set
 * once the thread holds any of them. Without the key (its creation
 * failed) they live as long as the process, no worse than before. */
static pthread_key_t in_key;
static pthread_once_t in_key_once = PTHREAD_ONCE_INIT;
static int in_key_rc = -1;

static void end_inflater(void *unused)
{
	(void)unused;
	if (tls_dd)
		libdeflate_free_decompressor(tls_dd);
	free(tls_out);
	free(tls_frame);
	tls_dd = NULL;
	tls_out = tls_frame = NULL;
	tls_out_cap = tls_frame_cap = 0;
}

static void make_in_key(void)
{
	in_key_rc = pthread_key_create(&in_key, end_inflater);
}

/* This thread holds inflate state: free it when the thread ends. */
static void inflater_held(void)
{
	pthread_once(&in_key_once, make_in_key);
	if (in_key_rc == 0 && !pthread_getspecific(in_key))
		pthread_setspecific(in_key, &in_key); /* any non-NULL value */
}

#define INFLATE_FIRST_CAP 65536
/* DEFLATE cannot expand input more than about 1032 times (a 258-byte match
 * per 2 bits), so a stream is never given more room than that: a corrupt
 * stream cannot make us allocate more than its own size allows. */
#define DEFLATE_MAX_RATIO 1032
#define DEFLATE_SLACK 1024

static uint8_t *out_buffer(size_t cap)
{
	if (cap <= tls_out_cap)
		return tls_out;
	uint8_t *p = realloc(tls_out, cap);
	if (!p)
		return NULL;
	inflater_held();
	tls_out = p;
	tls_out_cap = cap;
	return p;
}

/* Inflate exactly one zlib stream; then check its header's payload length
 * against the layout it names and against the bytes that came out. */
static int inflate_inner(const uint8_t *z, size_t zlen, uint8_t **inner, size_t *inner_len,
			 const char **why)
{
	if (!tls_dd) {
		if (!(tls_dd = libdeflate_alloc_decompressor()))
			return fail(why, "out of memory", -ENOMEM);
		inflater_held();
	}
	size_t bound = zlen * DEFLATE_MAX_RATIO + DEFLATE_SLACK;
	size_t cap = tls_out_cap > INFLATE_FIRST_CAP ? tls_out_cap : INFLATE_FIRST_CAP;
	if (cap > bound)
		cap = bound;
	size_t got = 0, used_in = 0;
	for (;;) {
		uint8_t *out = out_buffer(cap);
		if (!out)
			return fail(why, "out of memory", -ENOMEM);
		enum libdeflate_result r =
			libdeflate_zlib_decompress_ex(tls_dd, z, zlen, out, cap, &used_in, &got);
		if (r == LIBDEFLATE_SUCCESS)
			break;
		if (r != LIBDEFLATE_INSUFFICIENT_SPACE || cap >= bound)
			return fail(why, "zlib: stream is corrupt or truncated", -EINVAL);
		cap = cap > bound / 4 ? bound : cap * 4;
	}
	if (got < TB_V2_HEADER_SIZE)
		return fail(why, "zlib: stream is shorter than the 40-byte header", -EINVAL);
	uint32_t payload_len = get_be32(tls_out + 4);
	int64_t limit = payload_limit(tls_out, why);
	if (limit < 0)
		return (int)limit;
	if (payload_len > (uint64_t)limit)
		return fail(why, "payload length: larger than the layout can hold", -EINVAL);
	if (got != TB_V2_HEADER_SIZE + (size_t)payload_len)
		return fail(why, "payload length: does not match the inflated size", -EINVAL);
	*inner = tls_out;
	*inner_len = got;
	return 0;
}

/* The inner buffer of a compressed frame (the thread's, see inflate_inner),
 * its cookie checked against the frame's. */
static int inflate_frame(const uint8_t *frame, size_t len, uint8_t **inner, size_t *inner_len,
			 const char **why)
{
	if (len < TB_V2_FRAME_HEADER_SIZE)
		return fail(why, "frame: shorter than its 8-byte header", -EINVAL);
	uint32_t cookie = get_be32(frame);
	uint32_t base = COOKIE_BASE(cookie);
	if (cookie == DOUBLE_HISTOGRAM_COMPRESSED_COOKIE || cookie == DOUBLE_HISTOGRAM_INNER_COOKIE)
		return fail(why, DOUBLE_HISTOGRAM_REFUSAL, -ENOTSUP);
	if (base == V0_COMPRESSED_BASE)
		return fail(why, "cookie: V0 encoding is not supported", -ENOTSUP);
	if (base != V2_COMPRESSED_BASE && base != V1_COMPRESSED_BASE)
		return fail(why, "cookie: not an HdrHistogram compressed cookie", -EINVAL);
	uint32_t zlen = get_be32(frame + 4);
	if (zlen > len - TB_V2_FRAME_HEADER_SIZE)
		return fail(why, "frame: zlib length is larger than the input", -EINVAL);
	int rc = inflate_inner(frame + TB_V2_FRAME_HEADER_SIZE, zlen, inner, inner_len, why);
	if (rc < 0)
		return rc;
	uint32_t inner_base = COOKIE_BASE(get_be32(*inner));
	if ((base == V2_COMPRESSED_BASE) != (inner_base == V2_INNER_BASE))
		return fail(why, "cookie: inner encoding does not match the frame", -EINVAL);
	return 0;
}

int tb_v2_decode(const uint8_t *frame, size_t len, tb_hist *out, const char **why)
{
	uint8_t *inner;
	size_t inner_len;
	int rc = inflate_frame(frame, len, &inner, &inner_len, why);
	if (rc < 0)
		return rc;
	return tb_v2_decode_inner(inner, inner_len, out, why);
}

/* The frame a base64 payload decodes to is the thread's (tls_frame, above),
 * kept as inflate's output is (a replay decodes one a line). */

/* The inner buffer of a base64 payload (the thread's, see inflate_inner). */
static int inflate_base64(const char *text, size_t n, uint8_t **inner, size_t *inner_len,
			  const char **why)
{
	size_t cap = tb_base64_decoded_bound(n);
	if (cap > tls_frame_cap || !tls_frame) {
		uint8_t *grown = realloc(tls_frame, cap ? cap : 1);
		if (!grown)
			return fail(why, "out of memory", -ENOMEM);
		inflater_held();
		tls_frame = grown;
		tls_frame_cap = cap;
	}
	size_t len;
	int rc = tb_base64_decode(text, n, tls_frame, cap, &len);
	if (rc < 0)
		return fail(why, "base64: not valid base64 text", -EINVAL);
	return inflate_frame(tls_frame, len, inner, inner_len, why);
}

int tb_v2_decode_base64(const char *text, size_t n, tb_hist *out, const char **why)
{
	uint8_t *inner;
	size_t inner_len;
	int rc = inflate_base64(text, n, &inner, &inner_len, why);
	if (rc < 0)
		return rc;
	return tb_v2_decode_inner(inner, inner_len, out, why);
}

int tb_v2_check_base64(const char *text, size_t n, const char **why)
{
	uint8_t *inner;
	size_t inner_len;
	int rc = inflate_base64(text, n, &inner, &inner_len, why);
	if (rc < 0)
		return rc;
	struct inner_header hd;
	struct v2_scan s;
	rc = parse_inner_header(inner, inner_len, &hd, why);
	if (rc == 0 && hd.base == V2_INNER_BASE) {
		rc = scan_v2_counts(inner + TB_V2_HEADER_SIZE, hd.payload_len, hd.counts_len, &s, why);
	} else if (rc == 0) {
		/* V1 (fixed-width counts) is rare enough to be checked by decoding it */
		tb_hist scratch = {0};
		rc = tb_v2_decode_inner(inner, inner_len, &scratch, why);
		tb_hist_free(&scratch);
	}
	return rc;
}

/* Add scanned V2 counts to dst, growing it first as tb_hist_add_growing
 * would for a histogram holding them. */
static int add_scanned(tb_hist *dst, const uint8_t *p, size_t n, const struct v2_scan *s)
{
	if (s->total > INT64_MAX - dst->total)
		return -EOVERFLOW;
	if (s->last >= 0) {
		int64_t max = tb_hist_highest_equivalent(dst, tb_hist_value_at_index(dst, s->last));
		int rc = tb_hist_grow(dst, max);
		if (rc < 0)
			return rc;
	}
	add_v2_counts(p, n, dst->counts, 1);
	dst->total += s->total;
	note_scan(dst, s);
	return 0;
}

/* The common case in one pass: check each word as scan_v2_counts does and
 * add it to dst (same L and S) at once. Returns 0, a negative errno with
 * *why for a malformed stream, or 1 when a count holds values above dst's
 * H (dst must grow first); in every case but 0, dst is as it was. Counters
 * are added unsigned: a sum that would pass INT64_MAX is caught by the
 * totals before the call returns, and undone exactly. */
static int add_checked(tb_hist *dst, const uint8_t *p, size_t n, int32_t counts_len,
		       struct v2_scan *s, const char **why)
{
	/* counts up to dst_len hold values dst's H covers; a count above that
	 * makes tb_hist_add_growing (the rule replay follows) grow dst */
	int32_t top = tb_hist_index_of(dst, dst->highest);
	int64_t dst_len =
		tb_hist_highest_equivalent(dst, tb_hist_value_at_index(dst, top)) > dst->highest ? top : top + 1;
	int rc = walk_v2_counts(p, n, counts_len, dst->counts, dst_len, s, why);
	if (rc == 0 && s->total > INT64_MAX - dst->total) {
		add_v2_counts(p, n, dst->counts, -1);
		rc = -EOVERFLOW;
	}
	return rc;
}

int tb_v2_decode_base64_add(const char *text, size_t n, tb_hist *dst, const char **why)
{
	uint8_t *inner;
	size_t inner_len;
	int rc = inflate_base64(text, n, &inner, &inner_len, why);
	if (rc < 0)
		return rc;
	struct inner_header hd;
	struct v2_scan s;
	const uint8_t *counts = inner + TB_V2_HEADER_SIZE;
	rc = parse_inner_header(inner, inner_len, &hd, why);
	/* indices mean the same values only for the same L and S */
	if (rc == 0 && (hd.base != V2_INNER_BASE || hd.lowest != dst->lowest ||
			hd.sig != dst->sig_digits))
		rc = -ERANGE;
	if (rc == 0) {
		rc = add_checked(dst, counts, hd.payload_len, hd.counts_len, &s, why);
		if (rc == 0) {
			dst->total += s.total;
			note_scan(dst, &s);
		} else if (rc == 1) { /* dst must grow: check all, grow, then add */
			rc = scan_v2_counts(counts, hd.payload_len, hd.counts_len, &s, why);
			if (rc == 0)
				rc = add_scanned(dst, counts, hd.payload_len, &s);
		}
	}
	return rc;
}
