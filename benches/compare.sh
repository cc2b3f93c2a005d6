#!/bin/sh
# Prints, in one run on the same files, the ratios of issue 19's goal list and of
# docs/performance.md, each from commands measured side by side by one hyperfine run per trace:
# `mtf check` against the hand-written reader (benches/handwritten.rs), text `dump` against
# `check`, JSON lines against text `dump`, `pack` against `awk` reading the same text, the
# semantic pass against the decode; records/s for each subcommand; peak RSS of `check` (a
# mapped file, a pipe, a zstd file); the instruction counts of `check` and of the hand-written
# reader under callgrind (repeatable on a loaded machine).
#
# Usage: benches/compare.sh [WORKDIR] [SIZES]
#   WORKDIR (default /tmp/mtf-compare) receives the generated traces and their dumps (never
#   committed); SIZES (default "1M 10M") are the record counts given to examples/gen_hatf.rs.
#   RUNS (default 5) runs per command.
# Needs: cargo, hyperfine (Debian: apt-get install hyperfine), awk, python3, /usr/bin/time;
# valgrind for the instruction counts (skipped without it). Builds the release binaries first.
#
# To add a measurement: one line in `commands` (NAME|COMMAND) and one `row` line below it; a
# row is "what / against: ratio (goal)" from the mean times of two named commands.
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
AWK=${AWK:-awk}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mtf:     $(git -C "$ROOT" describe --always --dirty)"
echo "awk:     $(readlink -f "$(command -v "$AWK")")"

# The commands measured side by side on trace $f (dumps $txt, $jsonl), one per line:
# NAME|COMMAND (run without a shell: hyperfine -N splits it as a shell would).
commands() {
  cat <<EOF
hw|$HW $f
check|$M check -q --no-semantic $f
semantic|$M check -q $f
text|$M dump $f
jsonl|$M dump --format jsonl $f
pack|$M pack --dtd $W/hatf-bench.dtd $txt -o $W/packed.mtf
pack_j2|$M pack -j 2 --dtd $W/hatf-bench.dtd $txt -o $W/packed.mtf
pack_jsonl|$M pack --dtd $W/hatf-bench.dtd $jsonl -o $W/packed.mtf
awk|$AWK '{n+=NF} END{print n}' $txt
EOF
}

# NAME wall user: the mean wall-clock and user CPU seconds of each command of the last run.
hf_times() { # out.json
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], "%.4f" % r["mean"], "%.4f" % r["user"])' "$1"
}
# The mean seconds of a named command (wall, or user CPU with "user").
t() { awk -v n="$1" -v c="${2:-wall}" '$1 == n { print (c == "user" ? $3 : $2) }' "$W/times"; }
ratio() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
rate() { python3 -c "import sys; print('%.1f M/s' % (float(sys.argv[1]) / float(sys.argv[2]) / 1e6))" "$1" "$2"; }
# row LABEL A B GOAL: the time of A over the time of B, by wall clock and by user CPU time.
row() {
  printf '%-44s %6s   (user CPU %s)   goal %s\n' "$1:" "$(ratio "$(t "$2")" "$(t "$3")")" \
    "$(ratio "$(t "$2" user)" "$(t "$3" user)")" "$4"
}

for size in $SIZES; do
  f="$W/h$size.mtf"
  txt="$W/h$size.txt"
  jsonl="$W/h$size.jsonl"
  [ -f "$f" ] || cargo run --release --quiet --example gen_hatf -- "$size" "$f" >/dev/null
  [ -f "$txt" ] || "$M" dump "$f" >"$txt"
  [ -f "$jsonl" ] || "$M" dump --format jsonl "$f" >"$jsonl"
  n=$("$M" info "$f" | awk '/^nrecords/ {print $2}')
  echo
  echo "== $f: $(wc -c <"$f") bytes, $n records; text $(wc -c <"$txt") bytes"
  # The two readers must agree before their times are compared; so must pack and the trace.
  a=$("$HW" "$f" | tail -1)
  b=$(cargo run --release --quiet --example checksum -- "$f" | tail -1)
  [ "$a" = "$b" ] || { echo "checksums differ: $a / $b" >&2; exit 1; }
  "$M" pack --dtd "$W/hatf-bench.dtd" "$txt" -o "$W/packed.mtf" 2>/dev/null
  cmp -s "$f" "$W/packed.mtf" || { echo "pack of the dump differs from the trace" >&2; exit 1; }
  set --
  while IFS='|' read -r name cmd; do
    set -- "$@" -n "$name" "$cmd"
  done <<EOF
$(commands)
EOF
  hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$W/t.json" "$@" >/dev/null
  hf_times "$W/t.json" >"$W/times"
  echo "seconds (mean wall, user CPU):"
  while read -r name wall user; do
    printf '  %-12s %8s %8s   %s\n' "$name" "$wall" "$user" "$(rate "$n" "$wall") records"
  done <"$W/times"
  # The goals of issue 19 (a ratio of times: lower is better, except pack against awk).
  row "check --no-semantic / hand-written" check hw "<= 1.0"
  row "text dump / check --no-semantic" text check "<= 2.5"
  row "JSON lines / text dump" jsonl text "<= 1.3"
  row "awk / pack (pack's speed-up over awk)" awk pack ">= 2.0"
  row "awk / pack -j 2 (reading on a second thread)" awk pack_j2 ""
  row "awk / pack of JSON lines" awk pack_jsonl ""
  row "check (semantic pass too) / --no-semantic" semantic check ""
  row "check (semantic pass too) / hand-written" semantic hw ""
  rss=$(/usr/bin/time -f %M "$M" check -q --no-semantic "$f" 2>&1 >/dev/null | tail -1)
  echo "peak RSS of check --no-semantic: $rss KiB"
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
