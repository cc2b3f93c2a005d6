#!/bin/sh
# Prints, in one run on the same files, the ratios of issues 19 and 28 and of
# docs/performance.md for every trace shape of examples/gen_hatf.rs, each from commands measured
# side by side by one hyperfine run per trace: `mtf check` against the hand-written reader
# (benches/handwritten.rs; for the other shapes `benches/heap_handwritten.rs --decode`), `stats`
# and the semantic check against the hand-written heap analysis (benches/heap_handwritten.rs),
# text `dump` against `check`, JSON lines against text `dump`, `pack` against `awk` reading the
# same text, the semantic pass against the decode, `check` with a seek index against without,
# `-j 2` against `-j 1` for `stats` and `check`; records/s for each subcommand; peak RSS of
# `check` (a mapped file, a pipe, a zstd file), of `stats` and of the hand-written analysis; the
# instruction counts of `check`, `stats` and the hand-written reader and analysis under
# valgrind at the first size (repeatable on a loaded machine). At the end, one table of every
# ratio by shape.
#
# Before any time is compared, the readers are checked to agree: the hand-written reader's record
# counts and checksum equal the library's (examples/checksum.rs), the hand-written analysis's
# heap figures equal `mtf stats -f json`'s, and `pack` of the dump gives the trace back.
#
# Usage: benches/compare.sh [WORKDIR] [SIZES] [SHAPES]
#   WORKDIR (default /tmp/mtf-compare) receives the generated traces and their dumps (never
#   committed); SIZES (default "1M 10M") are the record counts given to examples/gen_hatf.rs;
#   SHAPES (default "default metadata-heavy heaptrack-like et-like") its `--shape`s.
#   RUNS (default 5) runs per command; CALLGRIND=0 skips the instruction counts (about two
#   minutes a shape at 1M); CARGO_ARGS is
#   given to every cargo command (`--no-default-features --features cli,compression` builds
#   what every measured command needs in about half the time: no Parquet, import, replay or
#   plot, none of which the measured commands run).
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
SHAPES=${3:-"default metadata-heavy heaptrack-like et-like"}
RUNS=${RUNS:-5}
mkdir -p "$W"
cd "$ROOT"
CARGO_ARGS=${CARGO_ARGS:-}
# shellcheck disable=SC2086 # CARGO_ARGS is a list of arguments
cargo build --release --quiet $CARGO_ARGS --bin mtf --example gen_hatf --example checksum
# shellcheck disable=SC2086
cargo bench --quiet $CARGO_ARGS --bench handwritten --bench heap_handwritten --no-run 2>/dev/null
T=${CARGO_TARGET_DIR:-$ROOT/target}/release
M=$T/mtf
HW=$(ls -t "$T"/deps/handwritten-* | grep -v '\.d$' | head -1)
HH=$(ls -t "$T"/deps/heap_handwritten-* | grep -v '\.d$' | head -1)
AWK=${AWK:-awk}
: >"$W/table"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mtf:     $(git -C "$ROOT" describe --always --dirty)"
echo "awk:     $(readlink -f "$(command -v "$AWK")")"

# The DTD each shape's traces are written for (examples/gen_hatf.rs writes it beside them).
dtd_of() {
  case $1 in
    default) echo hatf-bench.dtd ;;
    metadata-heavy) echo bench-metadata.dtd ;;
    heaptrack-like) echo bench-heaptrack.dtd ;;
    et-like) echo bench-et.dtd ;;
    *) echo "no shape $1" >&2; exit 2 ;;
  esac
}

# The commands measured side by side on trace $f (dumps $txt, $jsonl, seek index $idx, the
# hand-written reader $hw), one per line: NAME|COMMAND (run without a shell: hyperfine -N
# splits it as a shell would). The index is not at `$f.idx`, where every command would find it:
# only the commands that name it use it.
commands() {
  cat <<EOF
hw|$hw $f
heap|$HH $f
check|$M check -q --no-semantic -j 1 $f
check_idx|$M check -q --no-semantic -j 1 --index $idx $f
semantic|$M check -q -j 1 $f
semantic_j2|$M check -q -j 2 --index $idx $f
stats|$M stats -j 1 $f
stats_j2|$M stats -j 2 --index $idx $f
text|$M dump $f
jsonl|$M dump --format jsonl $f
pack|$M pack --dtd $W/$dtd $txt -o $W/packed.mtf
pack_j2|$M pack -j 2 --dtd $W/$dtd $txt -o $W/packed.mtf
pack_jsonl|$M pack --dtd $W/$dtd $jsonl -o $W/packed.mtf
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
# row LABEL A B GOAL: the time of A over the time of B, by wall clock and by user CPU time;
# also kept in $W/table for the table by shape at the end.
row() {
  r=$(ratio "$(t "$2")" "$(t "$3")")
  printf '%-50s %6s   (user CPU %s)   goal %s\n' "$1:" "$r" \
    "$(ratio "$(t "$2" user)" "$(t "$3" user)")" "$4"
  printf '%s|%s|%s|%s\n' "$1" "$shape $size" "$r" "$4" >>"$W/table"
}
# irow LABEL A B GOAL: instruction count A over B, printed and kept for the table as `row`.
irow() {
  r=$(ratio "$2" "$3")
  printf '%-50s %6s   goal %s\n' "$1:" "$r" "$4"
  printf '%s|%s|%s|%s\n' "$1" "$shape $size" "$r" "$4" >>"$W/table"
}
# rss COMMAND…: the peak RSS of a command, in KiB.
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }

for shape in $SHAPES; do
dtd=$(dtd_of "$shape")
for size in $SIZES; do
  # The default shape keeps the names of earlier runs (h1M.mtf).
  case $shape in default) base="$W/h$size" ;; *) base="$W/$shape-$size" ;; esac
  f="$base.mtf"
  txt="$base.txt"
  jsonl="$base.jsonl"
  idx="$base.seek"
  [ -f "$f" ] || "$T"/examples/gen_hatf "$size" "$f" --shape "$shape" >/dev/null
  [ -f "$txt" ] || "$M" dump "$f" >"$txt"
  [ -f "$jsonl" ] || "$M" dump --format jsonl "$f" >"$jsonl"
  [ -f "$idx" ] || "$M" index -q "$f" -o "$idx" >/dev/null
  n=$("$M" info "$f" | awk '/^nrecords/ {print $2}')
  echo
  echo "== $shape: $f: $(wc -c <"$f") bytes, $n records; text $(wc -c <"$txt") bytes"
  # The readers must agree before their times are compared; so must pack and the trace, and
  # the hand-written heap analysis and `stats`.
  case $shape in default) hw=$HW ;; *) hw="$HH --decode" ;; esac
  a=$($hw "$f" | tail -1)
  b=$("$T"/examples/checksum "$f" | tail -1)
  [ "$a" = "$b" ] || { echo "checksums differ: $a / $b" >&2; exit 1; }
  "$M" pack --dtd "$W/$dtd" "$txt" -o "$W/packed.mtf" 2>/dev/null
  cmp -s "$f" "$W/packed.mtf" || { echo "pack of the dump differs from the trace" >&2; exit 1; }
  "$HH" "$f" >"$W/heap.txt"
  "$M" stats -f json "$f" >"$W/stats.json"
  python3 - "$W/heap.txt" "$W/stats.json" <<'PY'
import json, sys
hand = dict(l.split() for l in open(sys.argv[1]))
ns = [n for n in json.load(open(sys.argv[2]))["namespaces"] if n["name"] == hand["namespace"]][0]
theirs = {"allocations": ns["allocations"], "bytes_allocated": ns["bytes_allocated"],
          "frees": ns["frees"], "bytes_freed": ns["bytes_freed"],
          "peak_bytes": ns["peak"]["bytes"], "peak_blocks": ns["peak"]["blocks"],
          "leaked_bytes": ns["leaked"]["bytes"], "leaked_blocks": ns["leaked"]["blocks"],
          "unknown_frees": ns["unknown_frees"]}
bad = [k for k, v in theirs.items() if str(v) != hand[k]]
if bad:
    sys.exit("stats and the hand-written heap analysis differ: " +
             ", ".join("%s %s / %s" % (k, theirs[k], hand[k]) for k in bad))
print("heap figures equal (stats, hand-written): " +
      " ".join("%s=%s" % (k, hand[k]) for k in theirs))
# The heap events of the trace (allocations, frees and moves of every namespace), for the
# events/s of the analysis, and the blocks alive at the peak, for its bytes per live block.
spaces = json.load(open(sys.argv[2]))["namespaces"]
with open(sys.argv[1] + ".events", "w") as out:
    print(sum(s["allocations"] + s["frees"] + s.get("moves", 0) for s in spaces),
          sum(s["peak"]["blocks"] for s in spaces), file=out)
PY
  read -r events peak_blocks <"$W/heap.txt.events"
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
  # The goals of issues 19 and 28 (a ratio of times: lower is better, except the speed-ups).
  row "stats / hand-written heap analysis" stats heap "<= 1.5"
  row "check (semantic) / hand-written heap analysis" semantic heap "<= 1.5"
  row "check --no-semantic / hand-written reader" check hw "<= 1.0"
  row "text dump / check --no-semantic" text check "<= 2.5"
  row "JSON lines / text dump" jsonl text "<= 1.3"
  row "awk / pack (pack's speed-up over awk)" awk pack ">= 2.0"
  row "awk / pack -j 2 (reading on a second thread)" awk pack_j2 ""
  row "awk / pack of JSON lines" awk pack_jsonl ""
  row "check --no-semantic with a seek index / without" check_idx check "<= 1.0"
  row "stats -j 1 / -j 2 --index (speed-up)" stats stats_j2 ">= 1.7"
  row "check -j 1 / -j 2 --index (speed-up)" semantic semantic_j2 ">= 1.7"
  row "check (semantic pass too) / --no-semantic" semantic check ""
  # The same ratios in instructions (valgrind, one thread), at the first size only: repeatable
  # to a fraction of a percent where the wall-clock ratios of commands this short move by tens
  # of percent from one run to the next on a small shared machine. An instruction is not a
  # cycle (a cache miss costs more than many), so these show the work, the times the cost.
  if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null &&
    [ "$size" = "$(echo "$SIZES" | cut -d' ' -f1)" ]; then
    irs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 \
      >/dev/null | awk '/I *refs/ {gsub(",", "", $NF); print $NF}'; }
    i_hw=$(irs $hw "$f")
    i_heap=$(irs "$HH" "$f")
    i_check=$(irs "$M" check -q --no-semantic -j 1 "$f")
    i_semantic=$(irs "$M" check -q -j 1 "$f")
    i_stats=$(irs "$M" stats -j 1 "$f")
    echo "instructions per record: hand-written reader $((i_hw / n)), hand-written heap analysis" \
      "$((i_heap / n)), check --no-semantic $((i_check / n)), check $((i_semantic / n)), stats $((i_stats / n))"
    irow "instructions: stats / hand-written heap analysis" "$i_stats" "$i_heap" "<= 1.5"
    irow "instructions: check (semantic) / hand-written heap analysis" "$i_semantic" "$i_heap" "<= 1.5"
    irow "instructions: check --no-semantic / hand-written reader" "$i_check" "$i_hw" "<= 1.0"
  fi
  # Issue 28 item 2: at least 20 M heap events/s per core (one thread here).
  echo "heap events/s ($events events): stats $(rate "$events" "$(t stats)")," \
    "semantic check $(rate "$events" "$(t semantic)")," \
    "hand-written $(rate "$events" "$(t heap)")   goal >= 20 M/s"
  echo "peak RSS of check --no-semantic: $(rss "$M" check -q --no-semantic "$f") KiB"
  echo "peak RSS of check (semantic): $(rss "$M" check -q -j 1 "$f") KiB;" \
    "-j 2: $(rss "$M" check -q -j 2 --index "$idx" "$f") KiB"
  rss_stats=$(rss "$M" stats -j 1 "$f")
  rss_check=$(rss "$M" check -q --no-semantic -j 1 "$f")
  echo "peak RSS of stats: $rss_stats KiB;" \
    "-j 2: $(rss "$M" stats -j 2 --index "$idx" "$f") KiB"
  # What the analysis adds to the decoder's memory, per block alive at the peak (indicative:
  # RSS counts pages, and the figures' own tables are in it).
  echo "stats' memory over check --no-semantic's per block alive at the peak ($peak_blocks):" \
    "$(python3 -c "import sys; print('%.0f bytes' % ((int(sys.argv[1]) - int(sys.argv[2])) * 1024 / max(1, int(sys.argv[3]))))" \
      "$rss_stats" "$rss_check" "$peak_blocks")"
  echo "peak RSS of the hand-written heap analysis: $(rss "$HH" "$f") KiB"
  # The same trace through a pipe and as a zstd file (spooled to TMPDIR, issue 19 item 5).
  rss=$(cat "$f" | /usr/bin/time -f %M "$M" check -q --no-semantic --dtd "$W/$dtd" - 2>&1 >/dev/null | tail -1)
  echo "peak RSS of check, pipe: $rss KiB"
  if command -v zstd >/dev/null; then
    [ -f "$f.zst" ] || zstd -q -1 "$f" -o "$f.zst"
    echo "peak RSS of check, zstd: $(rss "$M" check -q --no-semantic "$f.zst") KiB"
  fi
done
done

# Every ratio by shape: one row per ratio, one column per shape and size.
echo
echo "== ratios by shape (wall clock; the rows \"instructions:\" in instructions)"
python3 - "$W/table" <<'PY'
import sys
rows, cols, cell, goal = [], [], {}, {}
for line in open(sys.argv[1]):
    label, col, r, g = line.rstrip("\n").split("|")
    if label not in rows:
        rows.append(label)
    if col not in cols:
        cols.append(col)
    cell[label, col] = r
    goal[label] = g
w = max(len(r) for r in rows)
print("%-*s %s   goal" % (w, "", " ".join("%18s" % c for c in cols)))
for r in rows:
    print("%-*s %s   %s" % (w, r, " ".join("%18s" % cell.get((r, c), "") for c in cols), goal[r]))
PY

