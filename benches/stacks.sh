#!/bin/sh
# Figures by stack against heaptrack_print, measured side by side on the same recordings: for
# each heaptrack recording given (default: the five of tests/data/heaptrack-stacks), first
# checks that `mtf flamegraph --folded` equals `heaptrack_print -F` for every cost type they
# share, then times, with hyperfine, heaptrack_print writing the folded stacks of one cost
# against `mtf flamegraph --folded` of the imported trace (the import once, apart, as it is done
# once for every later question), and `mtf import` plus that (heaptrack_print with its text
# report off: only the figures and the folded stacks), and measures the peak RSS of each
# with /usr/bin/time; then `mtf stats` (its whole report) against heaptrack_print's whole
# report, time and peak RSS. One table at the end: time and memory of mtf / heaptrack_print.
#
# Usage: benches/stacks.sh [WORKDIR] [RECORDING.zst…]
#   WORKDIR (default /tmp/mtf-stacks) receives the imported traces (never committed).
#   RUNS (default 5) runs per command; COST (default peak) the cost type timed; CARGO_ARGS is
#   given to cargo.
# Record a recording of your own with `heaptrack -o NAME PROGRAM ARGS…` (it writes NAME.zst).
# Needs: cargo, heaptrack_print and hyperfine (Debian: apt-get install heaptrack hyperfine),
# /usr/bin/time, cmp.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
W=${1:-/tmp/mtf-stacks}
[ $# -gt 0 ] && shift
RUNS=${RUNS:-5}
COST=${COST:-peak}
mkdir -p "$W"
if [ $# -eq 0 ]; then
  set -- "$ROOT"/tests/data/heaptrack-stacks/*.zst
fi
CARGO_ARGS=${CARGO_ARGS:-}
# shellcheck disable=SC2086 # CARGO_ARGS is a list of arguments
(cd "$ROOT" && cargo build --release --quiet $CARGO_ARGS -p metatf-cli --bin mtf)
M=${CARGO_TARGET_DIR:-$ROOT/target}/release/mtf
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mtf:     $(git -C "$ROOT" describe --always --dirty)"
echo "heaptrack_print: $(heaptrack_print --version 2>&1 | head -1)"
: >"$W/table"

# Peak RSS in KiB of a command (its output thrown away).
rss() {
  /usr/bin/time -f '%M' "$@" >/dev/null 2>"$W/time.err" || true
  tail -1 "$W/time.err"
}

for rec in "$@"; do
  name=$(basename "$rec" .zst)
  t="$W/$name.mtf"
  "$M" import --from heaptrack "$rec" -o "$t" >/dev/null 2>&1
  for c in allocations temporary peak leaked; do
    heaptrack_print -F "$W/hp.$c" --flamegraph-cost-type "$c" "$rec" >/dev/null 2>&1
    "$M" flamegraph --folded --cost "$c" "$t" -o "$W/mtf.$c"
    if ! cmp -s "$W/hp.$c" "$W/mtf.$c"; then
      echo "$name: the folded stacks of cost $c differ from heaptrack_print's" >&2
      exit 1
    fi
  done
  lines=$(zstd -dc "$rec" | wc -l)
  echo
  echo "== $name: $lines lines, $(wc -c <"$rec") bytes compressed; folded stacks equal for 4 costs"
  hyperfine -N --runs "$RUNS" --warmup 1 --export-json "$W/$name.json" \
    -n heaptrack_print "heaptrack_print --print-peaks=0 --print-allocators=0 --print-temporary=0 -F /dev/null --flamegraph-cost-type $COST $rec" \
    -n mtf "$M flamegraph --folded --cost $COST $t -o /dev/null" \
    -n mtf-import "sh -c '$M import --from heaptrack $rec -o $W/again.mtf >/dev/null 2>&1 && $M flamegraph --folded --cost $COST $W/again.mtf -o /dev/null'" \
    -n heaptrack_print-report "heaptrack_print $rec" \
    -n mtf-stats "$M stats $t" \
    >"$W/$name.hyperfine" 2>&1 || { cat "$W/$name.hyperfine"; exit 1; }
  mean() {
    python3 -c "import json,sys; r={x['command']:x['mean'] for x in json.load(open('$W/$name.json'))['results']}; print(r['$1'])"
  }
  hp=$(mean heaptrack_print)
  mt=$(mean mtf)
  mi=$(mean mtf-import)
  hr=$(mean heaptrack_print-report)
  ms=$(mean mtf-stats)
  rh=$(rss heaptrack_print --print-peaks=0 --print-allocators=0 --print-temporary=0 -F /dev/null --flamegraph-cost-type "$COST" "$rec")
  rm_=$(rss "$M" flamegraph --folded --cost "$COST" "$t" -o /dev/null)
  rhr=$(rss heaptrack_print "$rec")
  rms=$(rss "$M" stats "$t")
  python3 - "$name" "$lines" "$hp" "$mt" "$mi" "$rh" "$rm_" "$hr" "$ms" "$rhr" "$rms" >>"$W/table" <<'PY'
import sys
n, lines, hp, mt, mi, rh, rm, hr, ms, rhr, rms = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
print(f"| {n} | {lines:,} | {hp*1000:.1f} ms | {mt/hp:.2f}× | {mi/hp:.2f}× | {rh/1024:.1f} MiB | {rm/rh:.2f}× "
      f"| {hr*1000:.1f} ms | {ms/hr:.2f}× | {rms/rhr:.2f}× |")
PY
  tail -1 "$W/table"
done

echo
echo "| recording | lines | heaptrack_print -F ($COST) | mtf flamegraph --folded / it | import + flamegraph / it | heaptrack_print peak RSS | mtf / it | heaptrack_print's report | mtf stats / it | RSS: mtf stats / it |"
echo "|---|---|---|---|---|---|---|---|---|---|"
cat "$W/table"
