#!/usr/bin/env bash
# The README's DuckDB queries over the `blocks` table of `mtf export --to parquet --table
# blocks`: live bytes over time (and the peak, set against `mtf stats`) and the most frequent
# allocation sizes, on a synthetic HATF trace of N alloc/free pairs (default 1,000,000). Installs DuckDB from PyPI into a venv under /tmp if python3 cannot
# import it. Not part of `cargo test`.
#
#   bash benches/duckdb_query.sh [N]        # MTF=path/to/mtf to use another binary
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
MTF=${MTF:-}
if [ -z "$MTF" ]; then
    cargo build --release --quiet
    MTF="${CARGO_TARGET_DIR:-target}/release/mtf"
fi
PY=python3
if ! $PY -c 'import duckdb' 2>/dev/null; then
    VENV=/tmp/mtf-duckdb-venv
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import duckdb' 2>/dev/null; then
        $PY -m venv "$VENV"
        "$VENV/bin/pip" install --quiet duckdb
    fi
    PY="$VENV/bin/python"
fi
WORK=$(mktemp -d /tmp/mtf-duckdb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# A heap that grows and shrinks: allocations of a few typical sizes, freed in random order.
$PY - "$N" > "$WORK/t.txt" <<'PY'
import random, sys
n = int(sys.argv[1]); rnd = random.Random(12)
sizes = [16, 16, 24, 32, 32, 32, 48, 64, 128, 256, 1024, 4096]
out = sys.stdout
out.write('%mtf 1 dtd="hatf10.dtd" class=32 order=little\nsection number=1\n')
live, nxt = [], 4096
for _ in range(n):
    s = rnd.choice(sizes)
    out.write(f'alloc size={s} address={nxt} vfield.data=""\n')
    live.append(nxt); nxt += s
    if len(live) > 1000 or (live and rnd.random() < 0.45):
        a = live.pop(rnd.randrange(len(live)))
        out.write(f'free address={a} vfield.data=""\n')
PY
"$MTF" pack "$WORK/t.txt" -o "$WORK/t.mtf"
time "$MTF" export --to parquet --table blocks "$WORK/t.mtf" -o "$WORK/pq"
ls -l "$WORK/pq"
STATS_PEAK=$("$MTF" stats -f json "$WORK/t.mtf" | $PY -c 'import json,sys; print(json.load(sys.stdin)["namespaces"][0]["peak"]["bytes"])')

$PY - "$WORK/pq" "$STATS_PEAK" <<'PY'
import sys, time, duckdb
d, stats_peak = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
t = time.time()
# Live bytes over the data records: +size where a lifetime starts, -size where it ends.
live = con.sql(f"""
WITH deltas AS (
        SELECT alloc_record AS record, size::HUGEINT AS delta FROM '{d}/blocks.parquet'
        UNION ALL
        SELECT free_record, -size::HUGEINT FROM '{d}/blocks.parquet' WHERE free_record IS NOT NULL),
     live AS (SELECT record, sum(sum(delta)) OVER (ORDER BY record) AS bytes
              FROM deltas GROUP BY record)
SELECT record // 100000 AS step, max(bytes) AS peak_live_bytes
FROM live GROUP BY step ORDER BY step
""").fetchall()
top = con.sql(f"""
SELECT size, count(*) AS allocations, sum(size) AS bytes
FROM '{d}/blocks.parquet' GROUP BY size ORDER BY allocations DESC LIMIT 5
""").fetchall()
print(f"duckdb {duckdb.__version__}: both queries in {time.time() - t:.2f} s")
print("step (x100k records)  peak live bytes")
for s, l in live[:10]:
    print(f"{s:>20}  {l}")
peak = max(l for _, l in live)
print(f"peak {peak}, mtf stats {stats_peak}: {'equal' if peak == stats_peak else 'DIFFERENT'}")
print("size  allocations  bytes")
for row in top:
    print("  ".join(str(x) for x in row))
sys.exit(0 if peak == stats_peak else 1)
PY
