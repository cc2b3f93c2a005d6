#!/bin/sh
# record.sh -- rebuild the programs and re-record the heaptrack fixtures and the
# heaptrack_print goldens of tests/data/heaptrack-stacks/ (see README.md there).
# Run from this folder: sh record.sh. Needs gcc, heaptrack and heaptrack_print (Debian:
# apt-get install heaptrack). The binaries go to /tmp/heaptrack-stacks (the module path the
# recordings name); source paths are recorded relative to this folder (-fdebug-prefix-map).
set -eu
src=$(pwd)
out=$(cd .. && pwd)
bin=/tmp/heaptrack-stacks
mkdir -p "$bin"
map="-fdebug-prefix-map=$src=."
gcc -O0 -g "$map" -o "$bin/nested" nested.c
gcc -O0 -g "$map" -o "$bin/temporaries" temporaries.c
gcc -O2 -g "$map" -o "$bin/inlined" inlined.c
gcc -O0 -g "$map" -pthread -o "$bin/threads" threads.c
g++ -O0 -g "$map" -o "$bin/templates" templates.cpp
for p in nested temporaries inlined threads templates; do
    rm -f "$out/$p.zst"
    (cd "$bin" && heaptrack -o "$out/$p" "./$p" > /dev/null)
    # relative file names, so the goldens name no folder of this machine
    (cd "$out" && heaptrack_print "$p.zst" > "$p.print.txt"
     for c in allocations temporary peak leaked; do
         heaptrack_print -F "$p.$c.folded" --flamegraph-cost-type "$c" "$p.zst" > /dev/null
     done)
done
