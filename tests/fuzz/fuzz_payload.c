/* fuzz_payload.c - libFuzzer target for the V2/V1 payload decoders.
 *
 * Every input is offered to all three decoders, each of which refuses in a
 * few bytes what is not its own form, so one corpus (compressed frames,
 * inflated inner buffers, base64 text; see gen_corpus.py) and libFuzzer's
 * cross-over mutations reach all of them:
 *   - tb_v2_decode(): the input as a compressed frame (cookie, length, zlib);
 *   - tb_v2_decode_base64(): the input as the text of a log line's payload;
 *   - tb_v2_decode_inner(): the input as an inflated inner buffer, the only
 *     way random bytes reach the counts decoder without getting past zlib;
 * and twice more through views the harness makes, because mutations rarely
 * keep a length field or a zlib stream valid:
 *   - tb_v2_decode_inner() with the payload length field set to the input's;
 *   - tb_v2_decode() of the input compressed into a frame.
 * One tb_hist is carried through all the calls, so reusing a histogram of
 * the same layout, and replacing one of another, is exercised as well.
 *
 * Every decoder must either refuse with -EINVAL or -ENOTSUP and a reason in
 * *why (-ENOMEM is a bug here: see FUZZ_ENOMEM_IS_A_BUG), or hand back a
 * histogram that keeps hist.h's invariants (fuzz_check.h) and survives a
 * round trip (all but the very largest layouts: FUZZ_ROUND_TRIP_MAX_COUNTS):
 * tb_v2_encode_inner() then tb_v2_decode_inner() gives the same counts, and
 * so does the compressed frame of that inner buffer through tb_v2_decode().
 * Anything else aborts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_check.h"
#include "tailbus/codec.h"

/* zlib's fastest level: the round trip checks the framing, not the ratio. */
#define FUZZ_ZLEVEL 1
/* HdrHistogram's V1 compressed cookie for 8-byte words (base 0x1c849302 with
 * the word size in bits 4-7, as the ycsb fixture carries it). */
#define FUZZ_V1_FRAME_COOKIE 0x1c849382u
/* Bytes a compressed view may declare beyond what it holds (decode_compressed). */
#define FUZZ_LENGTH_SLACK 64
/* Largest layout that gets the round trip (2^20 counters, 8 MiB): it makes
 * four more passes over the counts and two fresh allocations of them, which
 * on the largest layouts (S=5 and H near INT64_MAX: six million counters)
 * slows the fuzzer to a few runs per second. Their decoding and invariants
 * are still checked, and the encoder's code does not depend on the layout. */
#define FUZZ_ROUND_TRIP_MAX_COUNTS (1 << 20)
/* What a view returns when it would only repeat another (no decoder returns
 * a positive value other than 0). */
#define VIEW_SKIPPED 1

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int rc, const char *why, const char *decoder)
{
	FUZZ_CHECK(rc != -ENOMEM, "%s ran out of memory: %s", decoder, FUZZ_ENOMEM_IS_A_BUG);
	FUZZ_CHECK(rc == -EINVAL || rc == -ENOTSUP, "%s returned %d", decoder, rc);
	FUZZ_CHECK(why != NULL && why[0] != '\0', "%s refused without a reason", decoder);
}

/* Re-encode h, decode the result again (inner, then as a compressed frame)
 * and require the same histogram both times. */
static void check_round_trip(const tb_hist *h)
{
	/* the documented bound; pages past what the encoder writes stay untouched */
	size_t inner_cap = tb_v2_inner_bound(h);
	uint8_t *inner = malloc(inner_cap);
	FUZZ_CHECK(inner != NULL, "out of memory for %zu bytes", inner_cap);
	size_t inner_len = 0;
	int rc = tb_v2_encode_inner(h, inner, inner_cap, &inner_len);
	FUZZ_CHECK(rc == 0, "tb_v2_encode_inner returned %d with cap %zu", rc, inner_cap);
	FUZZ_CHECK(inner_len <= inner_cap, "encoded %zu bytes into %zu", inner_len, inner_cap);

	tb_hist again = {0};
	const char *why = NULL;
	rc = tb_v2_decode_inner(inner, inner_len, &again, &why);
	FUZZ_CHECK(rc == 0, "our own inner buffer does not decode: %d (%s)", rc, why);
	fuzz_check_same(h, &again, "encode_inner + decode_inner");

	size_t frame_cap = TB_V2_FRAME_HEADER_SIZE + compressBound((uLong)inner_len);
	uint8_t *frame = malloc(frame_cap);
	FUZZ_CHECK(frame != NULL, "out of memory for %zu bytes", frame_cap);
	size_t frame_len = 0;
	rc = tb_v2_compress(inner, inner_len, FUZZ_ZLEVEL, frame, frame_cap, &frame_len);
	FUZZ_CHECK(rc == 0, "tb_v2_compress returned %d", rc);
	/* decode into the histogram of the same layout: the reuse path */
	rc = tb_v2_decode(frame, frame_len, &again, &why);
	FUZZ_CHECK(rc == 0, "our own frame does not decode: %d (%s)", rc, why);
	fuzz_check_same(h, &again, "compress + decode");

	tb_hist_free(&again);
	free(frame);
	free(inner);
}

static void after_decode(int rc, const char *why, const tb_hist *h, const char *decoder)
{
	if (rc < 0) {
		check_refusal(rc, why, decoder);
		/* a refused input leaves `out` empty or as it was, never bank-filled */
		if (h->counts)
			fuzz_check_hist(h);
		return;
	}
	FUZZ_CHECK(rc == 0, "%s returned %d", decoder, rc);
	fuzz_check_hist(h);
	if (h->counts_len <= FUZZ_ROUND_TRIP_MAX_COUNTS)
		check_round_trip(h);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The input as an inner buffer whose payload length field is rewritten to
 * match its size. Without this, any mutation that adds or removes a byte
 * breaks that field and the counts decoder never sees the result. */
static int decode_fixed_length(const uint8_t *data, size_t size, tb_hist *h, const char **why)
{
	if (size < TB_V2_HEADER_SIZE || size - TB_V2_HEADER_SIZE > UINT32_MAX ||
	    get_be32(data + 4) == size - TB_V2_HEADER_SIZE) {
		/* nothing to fix up: the plain inner view has decoded this already */
		return VIEW_SKIPPED;
	}
	uint8_t *copy = malloc(size);
	FUZZ_CHECK(copy != NULL, "out of memory for %zu bytes", size);
	memcpy(copy, data, size);
	put_be32(copy + 4, (uint32_t)(size - TB_V2_HEADER_SIZE));
	int rc = tb_v2_decode_inner(copy, size, h, why);
	free(copy);
	return rc;
}

/* What replay does with a line, against what tb_v2_decode did with its
 * frame (rc, why, and h when rc is 0): tb_v2_check_base64 must give the
 * same verdict, and tb_v2_decode_base64_add into a merge that already holds
 * counts (laid out smaller, so it must grow for most payloads) must equal
 * that merge plus h by tb_hist_add_growing, or refuse and leave it as it
 * was (-ERANGE, a layout it does not take; -EOVERFLOW, a total past
 * INT64_MAX). */
static void check_base64_paths(const uint8_t *frame, size_t len, int rc, const char *why,
			       const tb_hist *h)
{
	size_t cap = tb_base64_encoded_len(len) + 1, tlen = 0;
	char *text = malloc(cap);
	FUZZ_CHECK(text != NULL, "out of memory for %zu bytes", cap);
	FUZZ_CHECK(tb_base64_encode(frame, len, text, cap, &tlen) == 0, "base64 encode failed");

	const char *why2 = NULL;
	int rc2 = tb_v2_check_base64(text, tlen, &why2);
	FUZZ_CHECK(rc2 == rc, "tb_v2_check_base64 returned %d, tb_v2_decode %d", rc2, rc);
	if (rc < 0)
		FUZZ_CHECK(strcmp(why, why2) == 0, "check says '%s', decode says '%s'", why2, why);

	tb_hist merge = {0}, want = {0};
	int sig = rc == 0 ? h->sig_digits : 3;
	int64_t lowest = rc == 0 ? h->lowest : 1;
	FUZZ_CHECK(tb_hist_init(&merge, lowest, 2 * lowest, sig) == 0, "merge init failed");
	FUZZ_CHECK(tb_hist_record_n(&merge, lowest, 3) == 0, "merge record failed");
	FUZZ_CHECK(tb_hist_init_like(&want, &merge) == 0, "copy init failed");
	FUZZ_CHECK(tb_hist_add(&want, &merge) == 0, "copy failed");
	int rc3 = tb_v2_decode_base64_add(text, tlen, &merge, &why2);
	int64_t sum;
	if (rc == 0 && rc3 == -EOVERFLOW) {
		FUZZ_CHECK(__builtin_add_overflow(want.total, h->total, &sum),
			   "-EOVERFLOW adding a total of %lld to %lld", (long long)h->total,
			   (long long)want.total);
	} else if (rc == 0 && rc3 != -ERANGE) { /* -ERANGE: a V1 payload, not this path's */
		FUZZ_CHECK(rc3 == 0, "tb_v2_decode_base64_add returned %d (%s)", rc3, why2);
		FUZZ_CHECK(tb_hist_add_growing(&want, h) == 0, "add_growing failed");
	} else if (rc != 0) { /* -ERANGE: refused on its layout before the counts are read */
		FUZZ_CHECK(rc3 == rc || rc3 == -ERANGE,
			   "tb_v2_decode_base64_add returned %d, tb_v2_decode %d", rc3, rc);
	}
	fuzz_check_same(&want, &merge, "tb_v2_decode_base64_add against decode + add_growing");
	tb_hist_free(&want);
	tb_hist_free(&merge);
	free(text);
}

/* The input compressed into a frame: random bytes behind a valid zlib stream
 * reach what tb_v2_decode checks after inflating (the declared payload length
 * against the inflated size, the inner cookie against the frame's). The
 * declared length is capped at what the input holds plus FUZZ_LENGTH_SLACK,
 * which still reaches the size check but keeps this view from asking for
 * gigabytes: the raw frame view already finds that. The frame cookie is V1's
 * when the input starts like a V1 inner buffer, V2's otherwise. */
static int decode_compressed(const uint8_t *data, size_t size, tb_hist *h, const char **why)
{
	uint8_t *inner = malloc(size ? size : 1);
	FUZZ_CHECK(inner != NULL, "out of memory for %zu bytes", size);
	memcpy(inner, data, size);
	if (size >= TB_V2_HEADER_SIZE) {
		uint64_t held = size - TB_V2_HEADER_SIZE + FUZZ_LENGTH_SLACK;
		if (get_be32(inner + 4) > held)
			put_be32(inner + 4, held > UINT32_MAX ? UINT32_MAX : (uint32_t)held);
	}
	size_t cap = TB_V2_FRAME_HEADER_SIZE + compressBound((uLong)size);
	uint8_t *frame = malloc(cap);
	FUZZ_CHECK(frame != NULL, "out of memory for %zu bytes", cap);
	uLongf zlen = (uLongf)(cap - TB_V2_FRAME_HEADER_SIZE);
	int zrc = compress2(frame + TB_V2_FRAME_HEADER_SIZE, &zlen, inner, (uLong)size, FUZZ_ZLEVEL);
	free(inner);
	FUZZ_CHECK(zrc == Z_OK, "compress2 returned %d", zrc);
	bool v1 = size >= 4 && data[0] == FUZZ_V1_FRAME_COOKIE >> 24 &&
		  data[1] == (uint8_t)(FUZZ_V1_FRAME_COOKIE >> 16) &&
		  data[2] == (uint8_t)(FUZZ_V1_FRAME_COOKIE >> 8) && (data[3] & 0x0f) == 0x01;
	put_be32(frame, v1 ? FUZZ_V1_FRAME_COOKIE : TB_V2_COMPRESSED_COOKIE);
	put_be32(frame + 4, (uint32_t)zlen);
	int rc = tb_v2_decode(frame, TB_V2_FRAME_HEADER_SIZE + zlen, h, why);
	check_base64_paths(frame, TB_V2_FRAME_HEADER_SIZE + zlen, rc, *why, h);
	free(frame);
	return rc;
}

typedef int (*decoder_fn)(const uint8_t *data, size_t size, tb_hist *h, const char **why);

static int decode_frame(const uint8_t *data, size_t size, tb_hist *h, const char **why)
{
	return tb_v2_decode(data, size, h, why);
}

static int decode_base64(const uint8_t *data, size_t size, tb_hist *h, const char **why)
{
	return tb_v2_decode_base64((const char *)data, size, h, why);
}

static int decode_inner(const uint8_t *data, size_t size, tb_hist *h, const char **why)
{
	return tb_v2_decode_inner(data, size, h, why);
}

static const struct {
	const char *name;
	decoder_fn decode;
} decoders[] = {
	{"tb_v2_decode", decode_frame},
	{"tb_v2_decode_base64", decode_base64},
	{"tb_v2_decode_inner", decode_inner},
	{"tb_v2_decode_inner (payload length fixed up)", decode_fixed_length},
	{"tb_v2_decode (input compressed)", decode_compressed},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tb_hist h = {0};
	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++) {
		const char *why = NULL;
		int rc = decoders[i].decode(data, size, &h, &why);
		if (rc != VIEW_SKIPPED)
			after_decode(rc, why, &h, decoders[i].name);
	}
	tb_hist_free(&h);
	return 0;
}
