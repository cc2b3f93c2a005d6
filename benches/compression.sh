#!/bin/sh
# Reproduces the figures of docs/compression.md. Needs a release build
# (CARGO_TARGET_DIR=/work/target-compact cargo build --release), python3, gzip, zstd, xz, unzip,
# awk; hyperfine for the speeds.
# Usage: benches/compression.sh [WORKDIR [TRACES]]
# The shared data is read from /work/shared/data (or $DATA). TRACES, default /tmp/metatf-traces,
# holds what benches/record-traces.sh recorded; the rows of those traces are skipped when they
# are missing.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
M=${MTF:-/work/target-compact/release/mtf}
D=${DATA:-/work/shared/data}
W=${1:-/tmp/mtf-compression}
R=${2:-/tmp/metatf-traces}
mkdir -p "$W" && cd "$W"
unzip -o -q "$D/android_memory_replay/systemui.zip"
python3 "$HERE/android_text.py" --dtd android < systemui.txt > android.txt
python3 "$HERE/android_text.py" --dtd hatf < systemui.txt > hatf.txt
cp "$HERE/android.dtd" .
"$M" pack --dtd android.dtd android.txt -o android.mtf
"$M" pack --dtd "$HERE/../dtds/hatf10.dtd" hatf.txt -o hatf.mtf
for t in LotsOfAllocs SimpleTrace; do
  "$M" import "$D/et3/$t/trace_with_deaths" -o "et3-$t.mtf"
done
ascii() { # original text: size, gzip -9, zstd -19, xz -9, lines
  echo "$1: $(wc -c <"$1") $(gzip -9c "$1" | wc -c) $(zstd -19 -c "$1" 2>/dev/null | wc -c) $(xz -9c "$1" | wc -c) lines $(wc -l <"$1")"
}
ascii systemui.txt
ascii "$D/et3/LotsOfAllocs/trace_with_deaths"
ascii "$D/et3/SimpleTrace/trace_with_deaths"
for t in android.mtf hatf.mtf et3-LotsOfAllocs.mtf et3-SimpleTrace.mtf; do
  "$M" size-report "$t"
  "$M" compact "$t" -o "$t.enc" --verify
  "$M" compact "$t" -o "$t.enc.xz" --compress xz --verify
  "$M" compact "$t" -o "$t.enc.zst" --compress zstd --verify
done
# Speeds (hyperfine if installed, else time).
if command -v hyperfine >/dev/null; then
  xz -9 -k -c systemui.txt > systemui.txt.xz
  hyperfine -w 1 -r 3 "xz -9 -c systemui.txt > /dev/null" \
    "$M compact -q android.mtf -o a.xz --compress xz" \
    "$M compact -q android.mtf -o a.mtf" \
    "xz -dc systemui.txt.xz > /dev/null" \
    "$M dump --data-only a.xz > /dev/null" \
    "$M check -q a.mtf"
fi

# Imported traces, one row each: the original text log and the trace `mtf import` makes of it,
# in bytes per data record of the imported trace (the count `mtf size-report` prints).
perrec() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.3f", n / d }'; }
size() { wc -c < "$1" | tr -d ' '; }
imported() { # NAME TEXT IMPORT-ARGS...: TEXT is the original log (uncompressed)
  name=$1 text=$2
  shift 2
  if [ ! -f "$text" ]; then
    echo "$name: $text missing, skipped (record it with benches/record-traces.sh $R)"
    return 0
  fi
  "$M" import -q "$@" -o "$name.mtf"
  "$M" size-report "$name.mtf" > "$name.report"
  n=$(sed -n '1s/.*: \([0-9]*\) data records.*/\1/p' "$name.report")
  gzip -9c "$text" > "$name.text.gz"
  zstd -q -19 -c "$text" > "$name.text.zst"
  xz -9c "$text" > "$name.text.xz"
  "$M" compact -q "$name.mtf" -o "$name.enc" --verify
  "$M" compact -q "$name.mtf" -o "$name.enc.xz" --compress xz
  "$M" compact -q "$name.mtf" -o "$name.enc.zst" --compress zstd
  # With live sets (extension live/1); a 32-bit program's trace may add --class 32 (Android).
  "$M" compact -q "$name.mtf" -o "$name.live" --live --verify $CLASS
  "$M" compact -q "$name.mtf" -o "$name.live.xz" --live --compress xz $CLASS
  "$M" compact -q "$name.mtf" -o "$name.live.zst" --live --compress zstd $CLASS
  echo "$name: $n data records, text $(size "$text") bytes; bytes per data record:"
  echo "  text $(perrec "$(size "$text")" "$n") gzip -9 $(perrec "$(size "$name.text.gz")" "$n")" \
    "zstd -19 $(perrec "$(size "$name.text.zst")" "$n") xz -9 $(perrec "$(size "$name.text.xz")" "$n")"
  echo "  mtf compact $(perrec "$(size "$name.enc")" "$n") --compress xz $(perrec "$(size "$name.enc.xz")" "$n")" \
    "--compress zstd $(perrec "$(size "$name.enc.zst")" "$n")"
  echo "  mtf compact --live $CLASS $(perrec "$(size "$name.live")" "$n")" \
    "--compress xz $(perrec "$(size "$name.live.xz")" "$n")" \
    "--compress zstd $(perrec "$(size "$name.live.zst")" "$n")"
  cat "$name.report"
  if command -v hyperfine >/dev/null; then
    hyperfine -w 1 -r 3 "xz -9 -c $text > /dev/null" \
      "$M compact -q $name.mtf -o $name.enc.xz --compress xz" \
      "$M compact -q $name.mtf -o $name.enc.zst --compress zstd" \
      "$M compact -q $name.mtf -o $name.live.xz --live --compress xz $CLASS" \
      "xz -dc $name.text.xz > /dev/null" \
      "$M check -q $name.live.xz" \
      "$M check -q $name.live.zst" \
      "$M check -q $name.live"
  fi
}
rm -f heaptrack.python
if [ -f "$R/heaptrack.python.zst" ]; then zstd -q -d -f "$R/heaptrack.python.zst" -o heaptrack.python
elif [ -f "$R/heaptrack.python.gz" ]; then gzip -dc "$R/heaptrack.python.gz" > heaptrack.python
fi
CLASS=
imported valgrind-python "$R/python.vg" --from valgrind "$R/python.vg"
imported heaptrack-python heaptrack.python --from heaptrack heaptrack.python
CLASS="--class 32"
imported android-import systemui.txt --from android "$D/android_memory_replay/systemui.zip"
CLASS=
imported et3-import "$D/et3/LotsOfAllocs/trace_with_deaths" "$D/et3/LotsOfAllocs/trace_with_deaths"
