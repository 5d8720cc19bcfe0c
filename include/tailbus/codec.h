/* tailbus/codec.h - HdrHistogram's V2 compressed encoding and base64.
 *
 * Every line of an interval log carries one histogram as base64 of a frame:
 * a compressed cookie, the zlib stream length, then a zlib (RFC 1950) stream of
 * an inner buffer: a 40-byte big-endian header (cookie, payload length,
 * normalizing offset, S, L, H, conversion ratio) followed by the counts from
 * index 0 to the index of the maximum, as ZigZag LEB128-64b9B words where a
 * run of k >= 2 zeros is written as -k. docs/formats.md, V2 encoding, is
 * the specification; the golden bytes there are pinned in tests/test_codec.c.
 *
 * Encoders write into caller buffers sized with the *_bound() functions and
 * never allocate. The decoder allocates the histogram it returns (or reuses
 * one of the same layout) and a temporary inflate buffer; it treats its input
 * as untrusted and reports what is wrong in `*why`, a static sentence naming
 * the field. V1 payloads (fixed-width counts) are decoded too; V0 is refused.
 */
#ifndef TAILBUS_CODEC_H
#define TAILBUS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_V2_ENCODING_COOKIE 0x1c849313u
#define TB_V2_COMPRESSED_COOKIE 0x1c849314u
#define TB_V2_HEADER_SIZE 40
#define TB_V2_FRAME_HEADER_SIZE 8
/* LEB128-64b9B: 7 bits per byte for 8 bytes, then a full byte. */
#define TB_V2_MAX_WORD_SIZE 9
/* zlib's default level, which the golden payload uses; Java's log writer uses 9. */
#define TB_V2_DEFAULT_LEVEL 6

/* Largest inner buffer / compressed frame / base64 text for this histogram. */
size_t tb_v2_inner_bound(const tb_hist *h);
size_t tb_v2_frame_bound(const tb_hist *h);
size_t tb_base64_encoded_len(size_t n);
size_t tb_base64_decoded_bound(size_t n);

/* The uncompressed inner buffer. Returns 0 or -ENOSPC. */
int tb_v2_encode_inner(const tb_hist *h, uint8_t *buf, size_t cap, size_t *len);
/* The compressed frame (cookie, length, zlib stream) of an inner buffer. */
int tb_v2_compress(const uint8_t *inner, size_t inner_len, int level,
		   uint8_t *frame, size_t cap, size_t *len);
/* Histogram -> base64 text (NUL-terminated). `scratch` must hold
 * tb_v2_inner_bound() + tb_v2_frame_bound() bytes. Returns 0, -ENOSPC or -EIO. */
int tb_v2_encode_base64(const tb_hist *h, int level, char *out, size_t cap, size_t *len,
			uint8_t *scratch, size_t scratch_cap);

/* Base64, standard alphabet with '=' padding, no line breaks. */
int tb_base64_encode(const uint8_t *in, size_t n, char *out, size_t cap, size_t *len);
int tb_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap, size_t *len);

/* Decode an inner buffer or a compressed frame into `out`. `out` must be
 * zeroed or hold a histogram from an earlier decode/init (reused when the
 * layout matches, replaced otherwise; the caller frees it with tb_hist_free).
 * Returns 0, -EINVAL (malformed; *why says which field), -ENOTSUP (V0 or a
 * normalizing offset) or -ENOMEM. */
int tb_v2_decode_inner(const uint8_t *buf, size_t len, tb_hist *out, const char **why);
int tb_v2_decode(const uint8_t *frame, size_t len, tb_hist *out, const char **why);
/* base64 text -> histogram, as found in a log line. */
int tb_v2_decode_base64(const char *text, size_t n, tb_hist *out, const char **why);
/* Check base64 text as tb_v2_decode_base64 would (the same errors and *why)
 * without keeping the counts: for a log line a reader must vet but does not
 * use. Returns 0, -EINVAL, -ENOTSUP or -ENOMEM. */
int tb_v2_check_base64(const char *text, size_t n, const char **why);
/* Add the counts of base64 text to `dst`, an initialised histogram: the
 * result is that of tb_v2_decode_base64 followed by tb_hist_add_growing,
 * without the histogram in between (replay merges a day of lines this way).
 * Only for a V2 payload with dst's lowest value and significant digits;
 * another returns -ERANGE and adds nothing (decode it and add instead).
 * Nothing is added either when the text is malformed (-EINVAL or -ENOTSUP,
 * with *why) or would take dst's total past INT64_MAX (-EOVERFLOW). */
int tb_v2_decode_base64_add(const char *text, size_t n, tb_hist *dst, const char **why);

#ifdef __cplusplus
}
#endif
#endif
