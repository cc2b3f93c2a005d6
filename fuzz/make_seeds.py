#!/usr/bin/env python3
"""Write the seed corpora of every fuzz target into fuzz/corpus/<target>/ (not committed),
made only from files of this repository: traces/, dtds/, formats/, tests/data/.

Usage: fuzz/make_seeds.py [MTF]   (MTF: the `mtf` binary used to dump the sample traces as
text and JSON lines; default target/debug/mtf, then `mtf` on PATH)."""
import glob
import hashlib
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")
# Keep seeds small: libFuzzer's -max_len defaults from the largest seed.
MAX = 64 * 1024

# Orders fixed by the library: container::SHIPPED (DTDs) and import::shipped::SHIPPED.
SHIPPED_DTDS = ["hatf10.dtd", "hatf10-split.dtd", "et_merlin.dtd", "et3.dtd", "hatf-android.dtd",
                "hatf-valgrind.dtd", "hatf-mtrace.dtd", "hatf-malloclab.dtd", "hatf-heaptrack.dtd",
                "hatf-heaptrack-raw.dtd", "jvm_trace.dtd", "tptp.dtd"]
MAPPINGS = ["et3", "et_merlin", "jvm_trace", "tptp", "android", "valgrind", "mtrace", "malloclab",
            "heaptrack", "heaptrack_raw"]


def put(target, data):
    if not data:
        return
    data = data[:MAX]
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def plain(p):
    """The bytes of a file, decompressed when it is gzip or zstd."""
    b = read(p)
    if b[:2] == b"\x1f\x8b":
        import gzip
        return gzip.decompress(b)
    if b[:4] == b"\x28\xb5\x2f\xfd":
        try:
            return subprocess.run(["zstd", "-dc", p], capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return b""
    return b


def parse_trace(b):
    """(dtd name, class, order, global region, [(number, section bytes)]) of a trace."""
    order = "<" if b[5] == 1 else ">"
    w = 8 if b[7] == 8 else 4
    fmt = order + ("Q" if w == 8 else "I")
    n = b[6]
    nsec, start, nrec = (struct.unpack_from(fmt, b, 16 + i * w)[0] for i in range(3))
    name = b[16 + 3 * w:16 + 3 * w + n].decode()
    table = 16 + 3 * w + n
    secs = []
    for i in range(nsec):
        num, st, sz = (struct.unpack_from(fmt, b, table + (3 * i + j) * w)[0] for j in range(3))
        secs.append((num, b[st:st + sz]))
    first = struct.unpack_from(fmt, b, table + w)[0] if nsec else len(b)
    return name, b[4], b[5], b[start:first], secs


def main():
    mtf = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/mtf")
    if not os.path.exists(mtf):
        mtf = shutil.which("mtf")
    traces = sorted(glob.glob(os.path.join(ROOT, "traces/*.mtf")))
    dtd_files = sorted(glob.glob(os.path.join(ROOT, "dtds/*.dtd"))
                       + glob.glob(os.path.join(ROOT, "src/dtd/*.dtd"))
                       + glob.glob(os.path.join(ROOT, "tests/data/dtd/**/*.dtd"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "tests/data/**/*.dtd"), recursive=True))
    for p in dtd_files:
        put("dtd", read(p))
    dumps = []
    for t in traces:
        b = read(t)
        for target in ["container", "trace"]:
            put(target, b)
        for target in ["parquet", "stats", "replay", "simulate"]:
            put(target, b"\x00" + b)
            put(target, b"\x02" + b)
        if mtf:
            for fmt in ["text", "jsonl"]:
                r = subprocess.run([mtf, "dump", "--format", fmt, t], capture_output=True,
                                   cwd=ROOT)
                if r.returncode == 0 and r.stdout:
                    dumps.append((fmt, r.stdout))
        try:
            name, cls, order, glob_region, secs = parse_trace(b)
        except (struct.error, UnicodeDecodeError, IndexError):
            continue
        base = os.path.basename(name)
        if base in SHIPPED_DTDS:
            d = SHIPPED_DTDS.index(base)
            flags = (cls - 1) | ((order - 1) << 1)
            put("decode_shipped", bytes([d, flags, 0, 0, 0, 0, 0]) + glob_region)
            # With the first section: its body without its `section` record is not known
            # here, so the whole section goes in the global region's place as well.
            for num, body in secs[:1]:
                put("decode_shipped", bytes([d, flags | 4, min(len(body), 255), 0, 0, 0, 0])
                    + body + glob_region)
        dtd_path = os.path.join(ROOT, "dtds", base)
        if os.path.exists(dtd_path):
            flags = (cls - 1) | ((order - 1) << 1)
            put("decode_pair", read(dtd_path) + b"\x00" + bytes([flags]) + glob_region)
            for num, body in secs:
                put("decode_pair", read(dtd_path) + b"\x00" + bytes([flags]) + body)
    for fmt, d in dumps:
        put("pack", d)
        if fmt == "text":
            put("encode", d)
            for target in ["parquet", "stats", "replay", "simulate"]:
                put(target, b"\x01" + d)
                put(target, b"\x03" + d)
    # Importers: every fixture with the index of its mapping.
    fixtures = {
        "et3": ["et3/trace", "et3/classes.txt", "et3/methods.txt", "et3/fields.txt", "et2/trace"],
        "et_merlin": ["et_merlin/odd.txt", "et_merlin/crlf.txt", "et_merlin/noeol-raw.txt"],
        "jvm_trace": ["jvm/trace.txt"],
        "tptp": ["tptp/trace.xml", "tptp/two.trcxml"],
        "android": ["alloc/android-systemui.txt", "alloc/android-odd.txt"],
        "valgrind": ["alloc/valgrind-allocs.vg", "alloc/valgrind-odd.vg"],
        "mtrace": ["alloc/mtrace-allocs.mtrace", "alloc/mtrace-odd.mtrace"],
        "malloclab": ["alloc/malloclab-3e.rep", "alloc/malloclab-2002.rep"],
        "heaptrack": ["alloc/heaptrack-sort.zst", "alloc/heaptrack-v2.txt"],
        "heaptrack_raw": ["alloc/heaptrack-sort.raw.zst"],
    }
    imp = os.path.join(ROOT, "tests/data/import")
    for fmt, files in fixtures.items():
        k = MAPPINGS.index(fmt)
        for rel in files:
            p = os.path.join(imp, rel)
            if not os.path.exists(p):
                continue
            body = plain(p)
            # et3's side files are parts 1..3: the selector's quotient picks the part.
            part = {"classes.txt": 1, "methods.txt": 2, "fields.txt": 3}.get(os.path.basename(rel), 0)
            put("import", bytes([k + part * len(MAPPINGS)]) + body)
            put("import_zip", bytes([k]) + read(p))
            mp = os.path.join(ROOT, "formats", fmt + ".map")
            put("mapping", read(mp) + b"\x00" + body[:4096])
    for k in range(len(MAPPINGS)):
        put("import_zip", bytes([k]) + read(os.path.join(imp, "jvm/run.zip")))
    put("mapping", read(os.path.join(imp, "user/allocs.map")) + b"\x00" + read(os.path.join(imp, "user/run.log")))
    # Replay operations files: a few operations of each kind, one and two threads.
    ops = b"".join(struct.pack("<BIIQQQIQ", kind | (0x80 if last else 0), th, 0, i, i + 100,
                               16 << (i % 8), 0, i)
                   for i, (kind, th, last) in enumerate(
                       [(0, 0, 0), (0, 1, 0), (2, 0, 0), (3, 1, 0), (1, 0, 1), (1, 1, 1)]))
    put("replay_ops", b"MTFRPL01" + struct.pack("<IQ", 2, 6) + ops)
    put("replay_ops", b"MTFRPL01" + struct.pack("<IQ", 1, 3) + ops[:45 * 3])
    for target in sorted(os.listdir(CORPUS)):
        print(f"{target}: {len(os.listdir(os.path.join(CORPUS, target)))} seeds")


if __name__ == "__main__":
    main()
