#!/usr/bin/env python3
"""Build the fuzz seed corpora from the HdrHistogram peer fixtures.

corpus/ring holds rings for fuzz_ring.c: honest ones (across the slot
array's end and the 32-bit index wrap, START/END pairs, a gap), and ones with
a bad metric, a bad position hint, a scribbled header or another slot state.
corpus/payload holds what fuzz_payload.c decodes: compressed V2 and V1 frames
(base64-decoded payloads), their inflated inner buffers, a few payloads as
base64 text, and two hand-made edge cases. corpus/logline holds short logs
cut from the fixture logs (header plus a few lines), the four malformed
single-line fixtures, and variants the fixtures lack (BaseTime, CRLF and
trailing blanks, a header without data, gzip'd logs: one member, two
members, one cut short). Every file is a few hundred bytes to a few KB, so a
fuzzer starts from valid structure without wasting time on bulk.

The output is deterministic; run it again after a fixture changes:
    python3 tests/fuzz/gen_corpus.py        (from anywhere)
"""
import base64
import gzip
import pathlib
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "hdrhistogram"
CORPUS = HERE / "corpus"

# docs/formats.md, V2 encoding: the golden payload of the "raw" fixture
# (L=1, H=3.6e9, S=3; 10000 x 1000 and one 1e8).
GOLDEN_B64 = b"HISTFAAAACl4nJNpmSzMwMDAyQABzFCaEURcm7yEwf4DROA8/4I5jNM7mJgAjtkHzg=="
V2_INNER_COOKIE = 0x1C849313
V2_FRAME_COOKIE = 0x1C849314
ONE_BITS = 0x3FF0000000000000  # 1.0 as IEEE-754 bits: the conversion ratio


def lines(name):
    return (FIXTURES / name).read_bytes().split(b"\n")


def data_lines(name):
    return [l for l in lines(name) if l and not l.startswith(b"#") and not l.startswith(b'"')]


def header(name):
    return [l for l in lines(name) if l.startswith(b"#") or l.startswith(b'"')]


def payload_of(line):
    return line.rsplit(b",", 1)[1]


def frame_of(line):
    return base64.b64decode(payload_of(line))


def inner_of(frame):
    (n,) = struct.unpack(">I", frame[4:8])
    return zlib.decompress(frame[8 : 8 + n])


def inner_buffer(sig, lowest, highest, counts_bytes):
    head = struct.pack(">IIIIqqQ", V2_INNER_COOKIE, len(counts_bytes), 0, sig, lowest, highest, ONE_BITS)
    return head + counts_bytes


def cut_v1_inner(inner, words=640):
    """The first `words` fixed-width counts of a V1 inner buffer (80 KB whole;
    the first non-zero count of ycsb line 1 is at index 599)."""
    (cookie,) = struct.unpack(">I", inner[:4])
    word = ((cookie & 0xF0) >> 4) & 0xE  # V1 word size from the cookie's size nibble
    counts = inner[40 : 40 + words * word]
    return inner[:4] + struct.pack(">I", len(counts)) + inner[8:40] + counts


def frame_buffer(inner):
    z = zlib.compress(inner, 6)
    return struct.pack(">II", V2_FRAME_COOKIE, len(z)) + z


def write(kind, name, data):
    d = CORPUS / kind
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def payload_corpus():
    golden = base64.b64decode(GOLDEN_B64)
    jh2 = data_lines("jHiccup-2.0.7S.logV2.hlog")
    jh3 = data_lines("jHiccup-2.0.7S.logV3.hlog")
    ycsb = data_lines("ycsb.logV1.hlog")
    tagged_v3 = next(l for l in jh3 if l.startswith(b"Tag="))
    seeds = {
        "golden-raw.frame": golden,
        "golden-raw.inner": inner_of(golden),
        "golden-raw.b64": GOLDEN_B64,
        "jhiccup-v2-line1.frame": frame_of(jh2[0]),
        "jhiccup-v2-line1.inner": inner_of(frame_of(jh2[0])),
        "jhiccup-v2-line30.b64": payload_of(jh2[29]),
        "jhiccup-v3-tagged.frame": frame_of(tagged_v3),
        "ycsb-v1-line1.frame": frame_of(ycsb[0]),
        "ycsb-v1-line1-cut.inner": cut_v1_inner(inner_of(frame_of(ycsb[0]))),
        # the fixture's truncated payload, as text
        "invalid-histogram.b64": payload_of(
            (FIXTURES / "test_tagged_invalid_histogram.txt").read_bytes().strip()),
        # empty histogram of the smallest layout (L=1, H=2, S=1)
        "empty-min-layout.inner": inner_buffer(1, 1, 2, b""),
        # a zero run (-3 zigzag = 5) then a count of 1 at index 3: L=1, H=1000, S=2
        "zero-run.frame": frame_buffer(inner_buffer(2, 1, 1000, bytes([5, 2]))),
    }
    for name, data in seeds.items():
        write("payload", name, data)


def logline_corpus():
    jh2 = "jHiccup-2.0.7S.logV2.hlog"
    jh3 = "jHiccup-2.0.7S.logV3.hlog"
    tagged = "tagged-Log.logV2.hlog"
    ycsb = "ycsb.logV1.hlog"
    nl = b"\n"
    jh2_head = nl.join(header(jh2) + data_lines(jh2)[:3]) + nl
    golden_line = b"0.000,1.000,100.008," + GOLDEN_B64
    seeds = {
        "jhiccup-v2-head.hlog": jh2_head,
        "jhiccup-v3-tags.hlog": nl.join(header(jh3) + data_lines(jh3)[:4]) + nl,
        "tagged-v2-head.hlog": nl.join(header(tagged) + data_lines(tagged)[:4]) + nl,
        "ycsb-v1-head.hlog": nl.join(header(ycsb) + data_lines(ycsb)[:1]) + nl,
        "jhiccup-v2-crlf.hlog": jh2_head.replace(nl, b"\r\n"),
        "basetime.hlog": nl.join([
            b"#[Logged with tailbus]",
            b"#[Histogram log format version 1.3]",
            b"#[StartTime: 1764525600.000 (seconds since epoch), Sun Nov 30 18:00:00 UTC 2025]",
            b"#[BaseTime: 1764525600.000 (seconds since epoch)]",
            b'"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
            golden_line,
            b"Tag=db," + golden_line,
        ]) + nl,
        "no-header-absolute.hlog": b"1764525600.000,1.000,100.008," + GOLDEN_B64 + nl,
        "header-only-no-newline.hlog": nl.join(header(jh2)),
        "trailing-blanks.hlog": jh2_head.replace(nl, b" \t\r\n"),
    }
    # gzip'd (mtime 0: the same bytes on every run)
    gz = lambda data: gzip.compress(data, compresslevel=9, mtime=0)
    jh3_head = seeds["jhiccup-v3-tags.hlog"]
    seeds["jhiccup-v3-tags.hlog.gz"] = gz(jh3_head)
    seeds["two-members.gz"] = gz(jh2_head[:200]) + gz(jh2_head[200:])
    seeds["cut-short.gz"] = gz(jh3_head)[:-12]
    for name in ["test_tagged_invalid_histogram.txt", "test_tagged_invalid_tag_key.txt",
                 "test_tagged_invalid_timestamp.txt", "test_tagged_missing_histogram.txt"]:
        seeds[name.replace("test_tagged_", "").replace(".txt", ".line")] = (FIXTURES / name).read_bytes()
    for name, data in seeds.items():
        write("logline", name, data)


# fuzz_ring.c: a 9-byte header (start index, hint relative to it, flags),
# then 16-byte events; rings of 64 events, lap bit set on even passes.
RING = 64


def ring_event(index, kind, metric, field, w1, lap_ok=True):
    lap = 1 if ((index // RING) & 1) == 0 else 0
    if not lap_ok:
        lap ^= 1
    w0 = ((field & (2**47 - 1)) << 17) | (metric << 3) | (lap << 2) | kind
    return struct.pack("<QQ", w0, w1)


def ring_input(start, hint, flags, events):
    """events: (kind, metric, field, w1[, lap_ok]) at indices start, start + 1, ..."""
    body = b"".join(ring_event((start + k) % 2**32, *e) for k, e in enumerate(events))
    return struct.pack("<IiB", start, hint, flags) + body


def ring_corpus():
    spans = [(0, k % 4, 1000 * (k + 1), 10**12 + k) for k in range(10)]
    pairs = []
    for seq in range(6):
        pairs += [(1, seq % 4, seq, 10**12), (2, seq % 4, seq, 10**12 + 5000 + seq)]
    wrap_start = 2**32 - 40  # crosses the slot array's end and the index wrap
    seeds = {
        "spans": ring_input(0, 10, 0, spans),
        "spans-odd-pass": ring_input(RING * 3 + 20, 0, 0, spans),
        "wrap": ring_input(wrap_start, 64, 0, [(0, k % 4, k, k) for k in range(64)]),
        "start-end": ring_input(5, 12, 0, pairs),
        "gap": ring_input(7, 10, 0, spans[:5] + [spans[5] + (False,)] + spans[6:]),
        "bad-metric-and-mark": ring_input(0, 3, 0, [(0, 9, 5, 1), (3, 1, 0, 1), (0, 2, -3, 1)]),
        "hint-out-of-range": ring_input(0, RING * 7 + 3, 0, spans),
        "hint-behind": ring_input(1000, -RING, 0, spans),
        "scribbled-size": ring_input(0, 10, 1, spans),
        "scribbled-mask": ring_input(0, 10, 2, spans),
        "detached": ring_input(0, 10, 1 << 2, spans),
        "claimed": ring_input(0, 10, 2 << 2, spans),
        # second words as offsets from the interval's start: late, in it, next
        "interval-times": ring_input(0, 20, 1 << 4, [
            (0, k % 4, lat, off % 2**32) for k, (lat, off) in enumerate(
                [(1000, 5 * 10**8), (0, 0), (2**46 - 1, 10), (5, -1), (7, 10**9 - 8), (3, 10**9 - 2),
                 (1, -5 * 10**8), (-4, 100), (250, 2 * 10**9), (3600 * 10**9 + 1, 1)] * 2)]),
    }
    for name, data in seeds.items():
        write("ring", name, data)


if __name__ == "__main__":
    payload_corpus()
    logline_corpus()
    ring_corpus()
