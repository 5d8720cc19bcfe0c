/* test_codec.c - V2 encoding against the golden bytes, round trips, and a
 * decoder that refuses every malformed input with a reason.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "tailbus/codec.h"
#include "tailbus/rand.h"

#define RAW_H 3600000000LL
#define HOUR_NS 3600000000000LL

/* docs/formats.md, V2 encoding: the "raw" fixture's inner buffer. */
static const uint8_t golden_inner[] = {
	0x1c, 0x84, 0x93, 0x13, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x00, 0xd6, 0x93, 0xa4, 0x00, 0x3f, 0xf0, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0xcf, 0x0f, 0xa0, 0x9c, 0x01, 0x97, 0x88, 0x02, 0x02};
static const char golden_b64[] =
	"HISTFAAAACl4nJNpmSzMwMDAyQABzFCaEURcm7yEwf4DROA8/4I5jNM7mJgAjtkHzg==";

struct buffers {
	uint8_t *inner, *frame, *scratch;
	char *b64;
	size_t inner_cap, frame_cap, scratch_cap, b64_cap;
};

static void buffers_for(struct buffers *b, const tb_hist *h)
{
	b->inner_cap = tb_v2_inner_bound(h);
	b->frame_cap = tb_v2_frame_bound(h);
	b->scratch_cap = b->inner_cap + b->frame_cap;
	b->b64_cap = tb_base64_encoded_len(b->frame_cap) + 1;
	b->inner = malloc(b->inner_cap);
	b->frame = malloc(b->frame_cap);
	b->scratch = malloc(b->scratch_cap);
	b->b64 = malloc(b->b64_cap);
	assert_true(b->inner && b->frame && b->scratch && b->b64);
}

static void buffers_free(struct buffers *b)
{
	free(b->inner);
	free(b->frame);
	free(b->scratch);
	free(b->b64);
}

static void make_raw(tb_hist *h)
{
	assert_int_equal(tb_hist_init(h, 1, RAW_H, 3), 0);
	tb_hist_record_n(h, 1000, 10000);
	tb_hist_record(h, 100000000);
}

static void raw_fixture_encodes_to_the_golden_inner_buffer(void **state)
{
	(void)state;
	tb_hist h;
	struct buffers b;
	make_raw(&h);
	buffers_for(&b, &h);
	size_t len;
	assert_int_equal(tb_v2_encode_inner(&h, b.inner, b.inner_cap, &len), 0);
	assert_int_equal(len, sizeof(golden_inner));
	assert_memory_equal(b.inner, golden_inner, sizeof(golden_inner));
	buffers_free(&b);
	tb_hist_free(&h);
}

static void raw_fixture_at_default_level_is_the_golden_payload(void **state)
{
	(void)state;
	tb_hist h;
	struct buffers b;
	make_raw(&h);
	buffers_for(&b, &h);
	size_t len;
	assert_int_equal(tb_v2_encode_base64(&h, TB_V2_DEFAULT_LEVEL, b.b64, b.b64_cap, &len,
					     b.scratch, b.scratch_cap), 0);
	assert_string_equal(b.b64, golden_b64);
	assert_int_equal(len, strlen(golden_b64));
	buffers_free(&b);
	tb_hist_free(&h);
}

static void golden_payload_decodes_to_the_raw_fixture(void **state)
{
	(void)state;
	tb_hist h, raw;
	memset(&h, 0, sizeof(h));
	const char *why = NULL;
	assert_int_equal(tb_v2_decode_base64(golden_b64, strlen(golden_b64), &h, &why), 0);
	make_raw(&raw);
	assert_int_equal(h.counts_len, raw.counts_len);
	assert_memory_equal(h.counts, raw.counts, (size_t)raw.counts_len * sizeof(int64_t));
	assert_int_equal(tb_hist_total(&h), 10001);
	assert_int_equal(tb_hist_max(&h), 100007935);
	assert_float_equal(h.conversion_ratio, 1.0, 0.0);
	tb_hist_free(&h);
	tb_hist_free(&raw);
}

static void random_histograms_round_trip_exactly(void **state)
{
	(void)state;
	uint64_t seed = 2026;
	const int digits[] = {1, 2, 3, 4, 5};
	const int64_t lowest[] = {1, 1, 1000, 1, 7};
	for (int round = 0; round < 40; round++) {
		tb_hist h, back;
		memset(&back, 0, sizeof(back));
		int k = round % 5;
		assert_int_equal(tb_hist_init(&h, lowest[k], HOUR_NS, digits[k]), 0);
		int n = (int)(tb_splitmix64(&seed) % 5000);
		for (int i = 0; i < n; i++) {
			int shift = (int)(tb_splitmix64(&seed) % 42);
			int64_t count = (int64_t)(tb_splitmix64(&seed) % 3 == 0 ? tb_splitmix64(&seed) % 100000 : 1);
			tb_hist_record_n(&h, (int64_t)(tb_splitmix64(&seed) >> (63 - shift)), count);
		}
		struct buffers b;
		buffers_for(&b, &h);
		size_t len;
		const char *why = NULL;
		assert_int_equal(tb_v2_encode_base64(&h, round % 10, b.b64, b.b64_cap, &len, b.scratch,
						     b.scratch_cap), 0);
		assert_memory_equal(b.b64, "HISTFA", 6);
		assert_int_equal(tb_v2_decode_base64(b.b64, len, &back, &why), 0);
		assert_true(tb_hist_same_layout(&h, &back));
		assert_memory_equal(back.counts, h.counts, (size_t)h.counts_len * sizeof(int64_t));
		assert_int_equal(back.total, h.total);
		assert_int_equal(tb_hist_max(&back), tb_hist_max(&h));
		buffers_free(&b);
		tb_hist_free(&h);
		tb_hist_free(&back);
	}
}

static void empty_histogram_round_trips(void **state)
{
	(void)state;
	tb_hist h, back;
	memset(&back, 0, sizeof(back));
	tb_hist_init(&h, 1, HOUR_NS, 3);
	struct buffers b;
	buffers_for(&b, &h);
	size_t len;
	const char *why;
	assert_int_equal(tb_v2_encode_inner(&h, b.inner, b.inner_cap, &len), 0);
	assert_int_equal(len, TB_V2_HEADER_SIZE + 1); /* one lone zero, as Java writes */
	assert_int_equal(tb_v2_decode_inner(b.inner, len, &back, &why), 0);
	assert_int_equal(back.total, 0);
	buffers_free(&b);
	tb_hist_free(&h);
	tb_hist_free(&back);
}

/* Build an inner buffer by hand: header fields then raw count bytes. */
static size_t handmade(uint8_t *buf, uint32_t cookie, int32_t sig, int64_t lo, int64_t hi,
		       const uint8_t *counts, size_t n, int32_t payload_adjust)
{
	memcpy(buf, golden_inner, TB_V2_HEADER_SIZE);
	uint32_t payload = (uint32_t)((int64_t)n + payload_adjust);
	for (int i = 0; i < 4; i++) {
		buf[i] = (uint8_t)(cookie >> (24 - 8 * i));
		buf[4 + i] = (uint8_t)(payload >> (24 - 8 * i));
		buf[12 + i] = (uint8_t)((uint32_t)sig >> (24 - 8 * i));
	}
	for (int i = 0; i < 8; i++) {
		buf[16 + i] = (uint8_t)((uint64_t)lo >> (56 - 8 * i));
		buf[24 + i] = (uint8_t)((uint64_t)hi >> (56 - 8 * i));
	}
	memcpy(buf + TB_V2_HEADER_SIZE, counts, n);
	return TB_V2_HEADER_SIZE + n;
}

static void c_style_lone_zero_is_accepted(void **state)
{
	(void)state;
	/* counts: 5, -1 (C's lone zero, zigzag 1), 7 */
	const uint8_t counts[] = {10, 1, 14};
	uint8_t buf[64];
	size_t n = handmade(buf, TB_V2_ENCODING_COOKIE, 3, 1, RAW_H, counts, sizeof(counts), 0);
	tb_hist h;
	memset(&h, 0, sizeof(h));
	const char *why;
	assert_int_equal(tb_v2_decode_inner(buf, n, &h, &why), 0);
	assert_int_equal(h.counts[0], 5);
	assert_int_equal(h.counts[1], 0);
	assert_int_equal(h.counts[2], 7);
	assert_int_equal(h.total, 12);
	tb_hist_free(&h);
}

/* A refusal's reason names the field at fault; h is freed. */
static void expect_reason(tb_hist *h, const char *why, const char *field)
{
	assert_non_null(why);
	if (!strstr(why, field))
		fail_msg("reason '%s' does not name '%s'", why, field);
	tb_hist_free(h);
}

static void expect_inner_rejected(const uint8_t *buf, size_t n, int rc, const char *field)
{
	tb_hist h;
	memset(&h, 0, sizeof(h));
	const char *why = NULL;
	assert_int_equal(tb_v2_decode_inner(buf, n, &h, &why), rc);
	expect_reason(&h, why, field);
}

static void decoder_rejects_bad_inner_buffers(void **state)
{
	(void)state;
	uint8_t buf[256];
	const uint8_t ok[] = {10};
	const uint8_t long_zero_run[] = {0xff, 0xff, 0x03}; /* -32768 zeros > counts_len */
	const uint8_t truncated[] = {0x80};
	size_t n;
	n = handmade(buf, 0x12345678, 3, 1, RAW_H, ok, 1, 0);
	expect_inner_rejected(buf, n, -EINVAL, "cookie");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 3, 1, RAW_H, ok, 1, 1);
	expect_inner_rejected(buf, n, -EINVAL, "payload length");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 6, 1, RAW_H, ok, 1, 0);
	expect_inner_rejected(buf, n, -EINVAL, "layout");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 3, 0, RAW_H, ok, 1, 0);
	expect_inner_rejected(buf, n, -EINVAL, "layout");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 3, 1000, 1500, ok, 1, 0);
	expect_inner_rejected(buf, n, -EINVAL, "layout");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 1, 1, 100, long_zero_run, 3, 0);
	expect_inner_rejected(buf, n, -EINVAL, "zero run");
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 3, 1, RAW_H, truncated, 1, 0);
	expect_inner_rejected(buf, n, -EINVAL, "truncated");
	n = handmade(buf, 0x1c849308, 3, 1, RAW_H, ok, 1, 0);
	expect_inner_rejected(buf, n, -ENOTSUP, "V0");
	expect_inner_rejected(buf, 10, -EINVAL, "header");
	/* counts past counts_len: a 1-digit histogram up to 100 has few counters */
	uint8_t many[200];
	memset(many, 2, sizeof(many));
	n = handmade(buf, TB_V2_ENCODING_COOKIE, 1, 1, 100, many, 100, 0);
	expect_inner_rejected(buf, n, -EINVAL, "counts");
}

static void expect_frame_rejected(const uint8_t *frame, size_t n, const char *field)
{
	tb_hist h;
	memset(&h, 0, sizeof(h));
	const char *why = NULL;
	assert_true(tb_v2_decode(frame, n, &h, &why) < 0);
	expect_reason(&h, why, field);
}

static void decoder_rejects_bad_frames(void **state)
{
	(void)state;
	uint8_t frame[256];
	size_t len;
	assert_int_equal(tb_base64_decode(golden_b64, strlen(golden_b64), frame, sizeof(frame), &len), 0);
	uint8_t bad[256];
	/* compressed cookie */
	memcpy(bad, frame, len);
	bad[0] ^= 0x40;
	expect_frame_rejected(bad, len, "cookie");
	/* zlib length larger than the input */
	memcpy(bad, frame, len);
	bad[7] += 1;
	expect_frame_rejected(bad, len, "zlib length");
	/* corrupt zlib stream */
	memcpy(bad, frame, len);
	bad[20] ^= 0xff;
	bad[21] ^= 0x55;
	expect_frame_rejected(bad, len, "zlib");
	/* truncated input */
	expect_frame_rejected(frame, 5, "frame");
	expect_frame_rejected(frame, len - 3, "zlib length");
	/* a frame whose stream inflates to more than the declared payload */
	uint8_t inner[64], big[256];
	memcpy(inner, golden_inner, sizeof(golden_inner));
	inner[sizeof(golden_inner)] = 2; /* one extra count byte, length field unchanged */
	size_t blen;
	assert_int_equal(tb_v2_compress(inner, sizeof(golden_inner) + 1, 6, big, sizeof(big), &blen), 0);
	expect_frame_rejected(big, blen, "payload length");
	/* base64 junk */
	tb_hist h;
	memset(&h, 0, sizeof(h));
	const char *why;
	assert_int_equal(tb_v2_decode_base64("HIST!!==", 8, &h, &why), -EINVAL);
	assert_int_equal(tb_v2_decode_base64("HISTFA", 6, &h, &why), -EINVAL);
}

static void base64_round_trips_every_length(void **state)
{
	(void)state;
	uint8_t in[64], out[64];
	char text[128];
	for (size_t n = 0; n < sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 37 + n);
		size_t tlen, olen;
		assert_int_equal(tb_base64_encode(in, n, text, sizeof(text), &tlen), 0);
		assert_int_equal(tlen, tb_base64_encoded_len(n));
		assert_int_equal(tb_base64_decode(text, tlen, out, sizeof(out), &olen), 0);
		assert_int_equal(olen, n);
		assert_memory_equal(out, in, n);
	}
	size_t olen;
	assert_int_equal(tb_base64_decode("QQ=A", 4, out, sizeof(out), &olen), -EINVAL);
	assert_int_equal(tb_base64_decode("Q===", 4, out, sizeof(out), &olen), -EINVAL);
	assert_int_equal(tb_base64_decode("QQ==QQ==", 8, out, sizeof(out), &olen), -EINVAL);
}

/* The decoder against a slow one written from RFC 4648: every character
 * value at every position of a text with whole groups on both sides, and
 * output buffers of exactly the decoded length, guarded on both ends. */
static int slow_sextet(int c)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *at = c ? strchr(abc, c) : NULL;
	return at ? (int)(at - abc) : -1;
}

static void base64_decode_matches_a_slow_decoder(void **state)
{
	(void)state;
	char text[41] = "TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcmsuQUJD"; /* 40 chars, 10 groups */
	uint8_t guard[48 + 2];
	for (size_t pos = 0; pos < 40; pos++) {
		for (int c = 0; c < 256; c++) {
			char t[41];
			memcpy(t, text, sizeof(t));
			t[pos] = (char)c;
			uint8_t want[30];
			bool ok = true;
			for (size_t g = 0; g < 10 && ok; g++) {
				uint32_t w = 0;
				for (int k = 0; k < 4; k++) {
					int s = slow_sextet((unsigned char)t[4 * g + (size_t)k]);
					ok = ok && s >= 0;
					w = w << 6 | (uint32_t)(s & 63);
				}
				want[3 * g] = (uint8_t)(w >> 16);
				want[3 * g + 1] = (uint8_t)(w >> 8);
				want[3 * g + 2] = (uint8_t)w;
			}
			/* '=' is valid padding only in the last group's last two */
			if (c == '=' && pos >= 38)
				continue;
			memset(guard, 0xa5, sizeof(guard));
			size_t len = 0;
			int rc = tb_base64_decode(t, 40, guard + 1, 30, &len);
			if (!ok) {
				assert_int_equal(rc, -EINVAL);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(len, 30);
			assert_memory_equal(guard + 1, want, 30);
			assert_int_equal(guard[0], 0xa5);
			assert_int_equal(guard[31], 0xa5);
		}
	}
	/* every length, decoded into exactly its size */
	uint8_t in[64], out[64 + 1];
	char t[128];
	for (size_t n = 1; n < sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 91 + 7);
		size_t tlen, olen;
		assert_int_equal(tb_base64_encode(in, n, t, sizeof(t), &tlen), 0);
		memset(out, 0x5a, sizeof(out));
		assert_int_equal(tb_base64_decode(t, tlen, out, n, &olen), 0);
		assert_int_equal(olen, n);
		assert_memory_equal(out, in, n);
		assert_int_equal(out[n], 0x5a);
	}
	/* a buffer that ends with the last whole group: no room for the final
	 * group (-ENOSPC), nothing written past it, a bad character still named
	 * first (-EINVAL) */
	size_t olen;
	memset(guard, 0xa5, sizeof(guard));
	assert_int_equal(tb_base64_decode(text, 40, guard + 1, 27, &olen), -ENOSPC);
	assert_int_equal(guard[28], 0xa5);
	char bad[41];
	memcpy(bad, text, sizeof(bad));
	bad[33] = '!';
	assert_int_equal(tb_base64_decode(bad, 40, guard + 1, 27, &olen), -EINVAL);
	assert_int_equal(guard[28], 0xa5);
}

static void decoder_reuses_a_histogram_of_the_same_layout(void **state)
{
	(void)state;
	tb_hist h;
	memset(&h, 0, sizeof(h));
	const char *why;
	assert_int_equal(tb_v2_decode_base64(golden_b64, strlen(golden_b64), &h, &why), 0);
	int64_t *counts = h.counts;
	assert_int_equal(tb_v2_decode_base64(golden_b64, strlen(golden_b64), &h, &why), 0);
	assert_ptr_equal(h.counts, counts);
	assert_int_equal(h.total, 10001); /* reset, not accumulated */
	tb_hist_free(&h);
}

/* encode h as base64 into b (buffers_for(h) done by the caller) */
static size_t encode_b64(const tb_hist *h, struct buffers *b)
{
	size_t len;
	assert_int_equal(tb_v2_encode_base64(h, TB_V2_DEFAULT_LEVEL, b->b64, b->b64_cap, &len,
					     b->scratch, b->scratch_cap), 0);
	return len;
}

static void assert_same_hist(const tb_hist *a, const tb_hist *b)
{
	assert_true(tb_hist_same_layout(a, b));
	assert_int_equal(a->counts_len, b->counts_len);
	assert_int_equal(a->bucket_count, b->bucket_count);
	assert_memory_equal(a->counts, b->counts, (size_t)a->counts_len * sizeof(int64_t));
	assert_int_equal(a->total, b->total);
	assert_int_equal(a->min_raw, b->min_raw);
	assert_int_equal(a->max_raw, b->max_raw);
}

/* replay's merge: adding payloads straight into the merge histogram must give
 * what decoding each one and tb_hist_add_growing give, growth included. */
static void decode_add_equals_decode_then_add_growing(void **state)
{
	(void)state;
	uint64_t seed = 77;
	tb_hist direct, via, one;
	memset(&one, 0, sizeof(one));
	assert_int_equal(tb_hist_init(&direct, 1, 1000000, 3), 0);
	assert_int_equal(tb_hist_init(&via, 1, 1000000, 3), 0);
	for (int round = 0; round < 30; round++) {
		tb_hist h;
		/* later rounds reach past the merge's highest value: it must grow */
		assert_int_equal(tb_hist_init(&h, 1, HOUR_NS, 3), 0);
		int n = (int)(tb_splitmix64(&seed) % 3000);
		for (int i = 0; i < n; i++) {
			int shift = (int)(tb_splitmix64(&seed) % (10 + round));
			tb_hist_record_n(&h, (int64_t)(tb_splitmix64(&seed) >> (63 - shift)),
					 (int64_t)(tb_splitmix64(&seed) % 4));
		}
		if (round % 7 == 0)
			tb_hist_record_n(&h, 0, 3); /* zeros: index 0, not a minimum */
		struct buffers b;
		buffers_for(&b, &h);
		size_t len = encode_b64(&h, &b);
		const char *why = NULL;
		assert_int_equal(tb_v2_decode_base64_add(b.b64, len, &direct, &why), 0);
		assert_int_equal(tb_v2_decode_base64(b.b64, len, &one, &why), 0);
		assert_int_equal(tb_hist_add_growing(&via, &one), 0);
		assert_same_hist(&direct, &via);
		assert_int_equal(tb_v2_check_base64(b.b64, len, &why), 0);
		buffers_free(&b);
		tb_hist_free(&h);
	}
	tb_hist_free(&direct);
	tb_hist_free(&via);
	tb_hist_free(&one);
}

/* A payload of another layout is left to the caller; a malformed one or one
 * that would overflow the total adds nothing. */
static void decode_add_refuses_without_touching_the_merge(void **state)
{
	(void)state;
	tb_hist merge, other, before;
	const char *why = NULL;
	make_raw(&merge);
	make_raw(&before);
	assert_int_equal(tb_hist_init(&other, 1, RAW_H, 2), 0);
	tb_hist_record(&other, 5);
	struct buffers b;
	buffers_for(&b, &other);
	size_t len = encode_b64(&other, &b);
	assert_int_equal(tb_v2_decode_base64_add(b.b64, len, &merge, &why), -ERANGE);
	assert_same_hist(&merge, &before);
	/* the golden inner buffer with its last count word cut short */
	uint8_t inner[sizeof(golden_inner)], frame[256];
	char text[512];
	memcpy(inner, golden_inner, sizeof(inner));
	inner[sizeof(inner) - 2] |= 0x80; /* "97 88 02" now runs on into the last byte, */
	inner[sizeof(inner) - 1] = 0x82;  /* which runs on past the end */
	size_t flen, tlen;
	assert_int_equal(tb_v2_compress(inner, sizeof(inner), 6, frame, sizeof(frame), &flen), 0);
	assert_int_equal(tb_base64_encode(frame, flen, text, sizeof(text), &tlen), 0);
	assert_int_equal(tb_v2_decode_base64_add(text, tlen, &merge, &why), -EINVAL);
	assert_string_equal(why, "counts: truncated LEB128 word");
	assert_int_equal(tb_v2_check_base64(text, tlen, &why), -EINVAL);
	assert_string_equal(why, "counts: truncated LEB128 word");
	assert_same_hist(&merge, &before);
	merge.total = INT64_MAX - 5; /* the golden payload's 10001 samples do not fit */
	assert_int_equal(tb_v2_decode_base64_add(golden_b64, strlen(golden_b64), &merge, &why),
			 -EOVERFLOW);
	merge.total = before.total;
	assert_same_hist(&merge, &before);
	buffers_free(&b);
	tb_hist_free(&merge);
	tb_hist_free(&before);
	tb_hist_free(&other);
}

/* Each thread compresses with a deflate stream of its own, which it frees
 * when it ends (under LeakSanitizer, the asan build's tests fail on the
 * ~270 KiB a finished thread would otherwise leave); every thread's frame is
 * the same bytes. */
#define COMPRESS_THREADS 4
struct compress_job {
	uint8_t frame[256];
	size_t len;
	int rc;
};

static void *compress_once(void *arg)
{
	struct compress_job *j = arg;
	j->rc = tb_v2_compress(golden_inner, sizeof(golden_inner), 6, j->frame, sizeof(j->frame),
			       &j->len);
	return NULL;
}

static void threads_compress_alike_and_free_their_stream(void **state)
{
	(void)state;
	struct compress_job mine, jobs[COMPRESS_THREADS];
	compress_once(&mine);
	assert_int_equal(mine.rc, 0);
	pthread_t t[COMPRESS_THREADS];
	for (int k = 0; k < COMPRESS_THREADS; k++)
		assert_int_equal(pthread_create(&t[k], NULL, compress_once, &jobs[k]), 0);
	for (int k = 0; k < COMPRESS_THREADS; k++) {
		assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(jobs[k].rc, 0);
		assert_int_equal(jobs[k].len, mine.len);
		assert_memory_equal(jobs[k].frame, mine.frame, mine.len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(raw_fixture_encodes_to_the_golden_inner_buffer),
		cmocka_unit_test(threads_compress_alike_and_free_their_stream),
		cmocka_unit_test(raw_fixture_at_default_level_is_the_golden_payload),
		cmocka_unit_test(golden_payload_decodes_to_the_raw_fixture),
		cmocka_unit_test(random_histograms_round_trip_exactly),
		cmocka_unit_test(empty_histogram_round_trips),
		cmocka_unit_test(c_style_lone_zero_is_accepted),
		cmocka_unit_test(decoder_rejects_bad_inner_buffers),
		cmocka_unit_test(decoder_rejects_bad_frames),
		cmocka_unit_test(base64_round_trips_every_length),
		cmocka_unit_test(base64_decode_matches_a_slow_decoder),
		cmocka_unit_test(decoder_reuses_a_histogram_of_the_same_layout),
		cmocka_unit_test(decode_add_equals_decode_then_add_growing),
		cmocka_unit_test(decode_add_refuses_without_touching_the_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
