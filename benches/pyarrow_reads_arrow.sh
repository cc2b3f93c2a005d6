#!/usr/bin/env bash
# pyarrow reads `mtf export --to arrow`: every shipped trace exported with all its tables (once
# whole, once partitioned by records), every file opened with pyarrow's IPC reader and its rows
# counted, the partitioned blocks read as a Hive dataset, and the peak live bytes swept from
# `blocks` (+size at alloc_record, -size at free_record, summed per data record) set against
# `mtf stats`. Installs pyarrow from PyPI into a venv under /tmp if python3 cannot import it.
# Not part of `cargo test` (which checks the same files with the Rust readers).
#
#   bash benches/pyarrow_reads_arrow.sh        # MTF=path/to/mtf to use another binary
set -euo pipefail
cd "$(dirname "$0")/.."
MTF=${MTF:-}
if [ -z "$MTF" ]; then
    cargo build --quiet
    MTF="${CARGO_TARGET_DIR:-target}/debug/mtf"
fi
PY=python3
if ! $PY -c 'import pyarrow' 2>/dev/null; then
    VENV=/tmp/mtf-pyarrow-venv
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import pyarrow' 2>/dev/null; then
        $PY -m venv "$VENV"
        "$VENV/bin/pip" install --quiet pyarrow
    fi
    PY="$VENV/bin/python"
fi
WORK=$(mktemp -d /tmp/mtf-pyarrow.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

status=0
for t in traces/*.mtf; do
    name=$(basename "$t" .mtf)
    "$MTF" export -q --to arrow --table all "$t" -o "$WORK/$name" 2>/dev/null
    "$MTF" export -q --to arrow --table all --partition-by records:7 "$t" -o "$WORK/$name-parts" 2>/dev/null
    "$MTF" stats -f json "$t" > "$WORK/$name.json"
    $PY - "$WORK/$name" "$WORK/$name-parts" "$WORK/$name.json" "$name" <<'PY' || status=1
import json, os, sys
import pyarrow as pa, pyarrow.dataset as ds
whole, parts, stats, name = sys.argv[1:]
rows = {}
for f in sorted(os.listdir(whole)):
    if f.endswith(".arrow"):
        with pa.ipc.open_file(os.path.join(whole, f)) as r:
            rows[f[:-6]] = r.read_all().num_rows
blocks = ds.dataset(os.path.join(parts, "blocks"), format="arrow", partitioning="hive").to_table()
assert blocks.num_rows == rows["blocks"], (blocks.num_rows, rows["blocks"])
assert "part" in blocks.schema.names
b = blocks.to_pydict()
ok = True
for ns in json.load(open(stats))["namespaces"]:
    delta = {}
    for n, s, a, f in zip(b["namespace"], b["size"], b["alloc_record"], b["free_record"]):
        if n != ns["name"] or s is None:
            continue
        delta[a] = delta.get(a, 0) + s
        if f is not None:
            delta[f] = delta.get(f, 0) - s
    live = peak = 0
    for r in sorted(delta):
        live += delta[r]
        peak = max(peak, live)
    allocations = sum(1 for n in b["namespace"] if n == ns["name"])
    want = (int(ns["peak"]["bytes"]), ns["allocations"])
    same = (peak, allocations) == want
    ok &= same
    print(f"{name:16} {ns['name']:10} peak {peak:>8} allocations {allocations:>4}  mtf stats {want}  {'ok' if same else 'DIFFERENT'}")
print(f"{name:16} {len(rows)} Arrow files read, {sum(rows.values())} rows")
sys.exit(0 if ok else 1)
PY
done
$PY -c 'import pyarrow; print("pyarrow", pyarrow.__version__)'
exit $status
