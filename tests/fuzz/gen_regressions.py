#!/usr/bin/env python3
"""Write the minimal inputs for the library bugs the fuzz targets found.

Each bug found by fuzzing gets an input here, built by hand to be as small and
readable as possible, next to the input the fuzzer found (kept as it was
saved, crash-<sha1>). regressions/README.md says what each one shows.

An input lives in regressions/open/<target>/ while the bug is open: the
libFuzzer build replays it (suite 'fuzz', test fuzz_regressions_<target>) and
fails until the library is fixed. Once fixed, move it to
regressions/<target>/, where every build replays it with the seed corpus
(suite 'unit'), so the bug cannot come back.

    python3 tests/fuzz/gen_regressions.py        (from anywhere)
"""
import base64
import pathlib
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent
OPEN = HERE / "regressions" / "open"

V2_INNER_COOKIE = 0x1C849313
V2_FRAME_COOKIE = 0x1C849314
ONE_BITS = 0x3FF0000000000000  # conversion ratio 1.0
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def zigzag_leb128_9b(v):
    """docs/formats.md, V2 encoding: ZigZag, then 7 bits per byte for 8 bytes, then 8."""
    u = ((v << 1) ^ (v >> 63)) & (2**64 - 1)
    out = bytearray()
    for _ in range(8):
        if u >> 7 == 0:
            out.append(u)
            return bytes(out)
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u & 0xFF)
    return bytes(out)


def inner(sig, lowest, highest, words, payload_len=None):
    counts = b"".join(zigzag_leb128_9b(w) for w in words)
    n = len(counts) if payload_len is None else payload_len
    return struct.pack(">IIIIqqQ", V2_INNER_COOKIE, n, 0, sig, lowest, highest, ONE_BITS) + counts


def frame(inner_bytes):
    z = zlib.compress(inner_bytes, 6)
    return struct.pack(">II", V2_FRAME_COOKIE, len(z)) + z


def log(*payload_frames):
    head = (b"#[StartTime: 1764525600.000 (seconds since epoch)]\n"
            b"#[BaseTime: 1764525600.000 (seconds since epoch)]\n")
    good = inner(3, 1, 3_600_000_000, [-1000, 10000])  # 10000 x 1000 (index 1000)
    lines = [b"0.000,1.000,0.001," + base64.b64encode(frame(good))]
    for i, f in enumerate(payload_frames):
        lines.append(b"%d.000,1.000,0.001," % (i + 1) + base64.b64encode(f))
    lines.append(b"%d.000,1.000,0.001," % (len(payload_frames) + 1) + base64.b64encode(frame(good)))
    return head + b"\n".join(lines) + b"\n"


def write(target, name, data):
    d = OPEN / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


# 1. total overflow (lib/hist.c tb_hist_set_count_at_index): two counts whose
#    sum passes INT64_MAX; layout L=1, H=2, S=1 (32 counters).
total_overflow = inner(1, 1, 2, [INT64_MAX, 1])
# 2. highest equivalent overflow (lib/hist.c tb_hist_highest_equivalent): one
#    count in the last counter of L=1, H=INT64_MAX, S=1 (960 counters; its
#    bucket is [31 << 58, 2^63), so lowest + size is 2^63 before the - 1).
top_counter = inner(1, 1, INT64_MAX, [-959, 1])
# 3. unchecked payload length (lib/codec.c inflate_inner): a zlib stream of
#    just the 40-byte header, declaring a payload of INT32_MAX bytes.
huge_payload = frame(inner(3, 1, 3_600_000_000, [], payload_len=INT32_MAX))

write("payload", "total-overflow.inner", total_overflow)
write("payload", "highest-equivalent-overflow.inner", top_counter)
write("payload", "unchecked-payload-length.frame", huge_payload)
write("logline", "total-overflow.hlog", log(frame(total_overflow)))
write("logline", "unchecked-payload-length.hlog", log(huge_payload))

# 4. merge overflow (lib/hist.c tb_hist_add): two intervals, each valid on its
#    own (2^62 samples of 1000), whose merge, as `tailbus replay` does it,
#    holds 2^63 samples.
half = inner(3, 1, 3_600_000_000, [-1000, 2**62])
write("logline", "merge-overflow.hlog", log(frame(half), frame(half)))
