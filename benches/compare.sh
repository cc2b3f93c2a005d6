#!/bin/sh
# Prints, in one run on the same files, the speed ratios of docs/performance.md: `mtf check`
# against the hand-written reader (benches/handwritten.rs), text `dump` against `check`, and
# JSON lines against text `dump`, each measured side by side with hyperfine; records/s for each;
# the instruction counts of `check` and of the hand-written reader under callgrind (repeatable on
# a loaded machine); and peak RSS of `check` (a mapped file, a pipe, a zstd file).
#
# Usage: benches/compare.sh [WORKDIR] [SIZES]
#   WORKDIR (default /tmp/mtf-compare) receives the generated traces (never committed);
#   SIZES (default "1M 10M") are the record counts given to examples/gen_hatf.rs.
# Needs: cargo, hyperfine (Debian: apt-get install hyperfine), /usr/bin/time; valgrind for the
# instruction counts (skipped without it). Builds the release binaries first.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
W=${1:-/tmp/mtf-compare}
SIZES=${2:-"1M 10M"}
RUNS=${RUNS:-5}
mkdir -p "$W"
cd "$ROOT"
cargo build --release --quiet --bin mtf --example gen_hatf --example checksum
cargo bench --quiet --bench handwritten --no-run 2>/dev/null
T=${CARGO_TARGET_DIR:-$ROOT/target}/release
M=$T/mtf
HW=$(ls -t "$T"/deps/handwritten-* | grep -v '\.d$' | head -1)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mtf:     $(git -C "$ROOT" describe --always --dirty)"

# mean seconds of each command, side by side in one hyperfine run
means() { # out.json
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]: print("%.4f" % r["mean"])' "$1"
}
ratio() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
rate() { python3 -c "import sys; print('%.1f M/s' % (float(sys.argv[1]) / float(sys.argv[2]) / 1e6))" "$1" "$2"; }

for size in $SIZES; do
  f="$W/h$size.mtf"
  [ -f "$f" ] || cargo run --release --quiet --example gen_hatf -- "$size" "$f" >/dev/null
  n=$("$M" info "$f" | awk '/^nrecords/ {print $2}')
  echo
  echo "== $f: $(wc -c <"$f") bytes, $n records"
  # The two readers must agree before their times are compared.
  a=$("$HW" "$f" | tail -1)
  b=$(cargo run --release --quiet --example checksum -- "$f" | tail -1)
  [ "$a" = "$b" ] || { echo "checksums differ: $a / $b" >&2; exit 1; }
  # `check --no-semantic` decodes and validates as the hand-written reader does; plain `check`
  # also runs the semantic pass of the DTD's analysis declarations (shown apart).
  hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$W/t.json" \
    "$HW $f" "$M check -q --no-semantic $f" "$M dump $f" "$M dump --format jsonl $f" \
    "$M check -q $f" >/dev/null
  set -- $(means "$W/t.json")
  hw=$1 check=$2 text=$3 jsonl=$4 semantic=$5
  echo "seconds: hand-written $hw, check --no-semantic $check, dump text $text, dump jsonl $jsonl, check (semantic pass too) $semantic"
  echo "records/s: hand-written $(rate "$n" "$hw"), check $(rate "$n" "$check"), text $(rate "$n" "$text"), jsonl $(rate "$n" "$jsonl")"
  echo "check / hand-written:   $(ratio "$check" "$hw")   (goal <= 1.0)"
  echo "text dump / check:      $(ratio "$text" "$check")   (goal <= 2.5)"
  echo "jsonl / text dump:      $(ratio "$jsonl" "$text")   (goal <= 1.3)"
  echo "check with semantic pass / hand-written: $(ratio "$semantic" "$hw")"
  rss=$(/usr/bin/time -f %M "$M" check -q --no-semantic "$f" 2>&1 >/dev/null | tail -1)
  echo "peak RSS of check:      $rss KiB"
  # The same trace through a pipe and as a zstd file (spooled to TMPDIR, issue 19 item 5).
  rss=$(cat "$f" | /usr/bin/time -f %M "$M" check -q --no-semantic --dtd "$W/hatf-bench.dtd" - 2>&1 >/dev/null | tail -1)
  echo "peak RSS of check, pipe: $rss KiB"
  if command -v zstd >/dev/null; then
    [ -f "$f.zst" ] || zstd -q -1 "$f" -o "$f.zst"
    rss=$(/usr/bin/time -f %M "$M" check -q --no-semantic "$f.zst" 2>&1 >/dev/null | tail -1)
    echo "peak RSS of check, zstd: $rss KiB"
  fi
done

if command -v valgrind >/dev/null; then
  f="$W/h$(echo "$SIZES" | cut -d' ' -f1).mtf"
  irs() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    awk '/Collected/ {print $NF}'; }
  ci=$(irs "$M" check -q --no-semantic "$f")
  hi=$(irs "$HW" "$f")
  echo
  echo "== instructions (callgrind) on $f"
  echo "check --no-semantic $ci, hand-written $hi: check / hand-written $(ratio "$ci" "$hi")"
fi
