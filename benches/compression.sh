#!/bin/sh
# Reproduces the figures of docs/compression.md. Needs a release build
# (CARGO_TARGET_DIR=/work/target-compact cargo build --release), python3, gzip, zstd, xz, unzip.
# Usage: benches/compression.sh [WORKDIR]   (the shared data is read from /work/shared/data)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
M=${MTF:-/work/target-compact/release/mtf}
D=${DATA:-/work/shared/data}
W=${1:-/tmp/mtf-compression}
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
  "$M" encode "$t" -o "$t.enc" --verify
  "$M" encode "$t" -o "$t.enc.xz" --compress xz --verify
  "$M" encode "$t" -o "$t.enc.zst" --compress zstd --verify
done
# Speeds (hyperfine if installed, else time).
if command -v hyperfine >/dev/null; then
  xz -9 -k -c systemui.txt > systemui.txt.xz
  hyperfine -w 1 -r 3 "xz -9 -c systemui.txt > /dev/null" \
    "$M encode -q android.mtf -o a.xz --compress xz" \
    "$M encode -q android.mtf -o a.mtf" \
    "xz -dc systemui.txt.xz > /dev/null" \
    "$M dump --data-only a.xz > /dev/null" \
    "$M check -q a.mtf"
fi
