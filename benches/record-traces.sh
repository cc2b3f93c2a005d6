#!/bin/sh
# record-traces.sh -- record fresh heap-allocation traces of a few real programs, for
# `mtf import --from valgrind|mtrace|heaptrack|heaptrack_raw` (docs/formats.md).
#
#   benches/record-traces.sh [OUTDIR]        (default /tmp/metatf-traces)
#
# Needs: valgrind, heaptrack (apt-get install valgrind heaptrack), a C/C++ compiler, python3,
# glibc >= 2.34 (libc_malloc_debug.so.0 for mtrace). Each tool missing is skipped with a note.
# The traces are large (the valgrind trace of the Python program has over a million events):
# keep them out of the repository.
set -u
OUT=${1:-/tmp/metatf-traces}
mkdir -p "$OUT"
cd "$OUT" || exit 2
export PYTHONMALLOC=malloc  # Python allocates through malloc: every object is an event
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || echo python3)
PYPROG='import json; d=[{"k":str(i)} for i in range(100000)]; print(len(json.dumps(d)))'
seq 1 20000 | sed 's/$/ line/' | sort -R > input.txt 2>/dev/null || seq 20000 > input.txt

# A small C++ program that calls every allocation function (C and C++ operators).
cat > allocs.cpp <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <new>
#include <string>
#include <vector>
int main() {
    void *p = malloc(24), *q = calloc(3, 8), *a = nullptr;
    std::printf("hello from the program\n"); std::fflush(stdout);
    p = realloc(p, 48); p = realloc(p, 40);
    void *m = memalign(64, 100);
    if (posix_memalign(&a, 32, 50) != 0) return 1;
    void *al = aligned_alloc(16, 64);
    std::printf("usable %zu\n", malloc_usable_size(q)); std::fflush(stdout);
    free(m); free(a); free(al); free(q); free(p); free(nullptr);
    int *one = new int(1); delete one;
    int *arr = new int[10]; delete[] arr;
    auto *big = new (std::align_val_t(64)) double[4]; operator delete[](big, std::align_val_t(64));
    std::vector<std::string> v;
    for (int i = 0; i < 20; i++) v.push_back(std::string(i * 3 + 20, 'x'));
    p = malloc(8); p = realloc(p, 0);
    std::printf("done %zu\n", v.size());
    return 0;
}
CPP
HAVE_CXX=0
if command -v g++ >/dev/null 2>&1 && g++ -O0 -std=c++17 -o allocs allocs.cpp; then HAVE_CXX=1; fi

# A preload library that turns mtrace on at start-up (glibc traces only after mtrace()).
cat > mtrace_on.c <<'C'
#include <mcheck.h>
__attribute__((constructor)) static void on(void) { mtrace(); }
C
DEBUG=$(ls /usr/lib/*/libc_malloc_debug.so.0 /lib/*/libc_malloc_debug.so.0 2>/dev/null | head -1)
HAVE_MTRACE=0
if [ -n "$DEBUG" ] && cc -shared -fPIC -o mtrace_on.so mtrace_on.c; then HAVE_MTRACE=1; fi

run() { echo "+ $*" >&2; "$@"; }

# vg LOG PROGRAM ARGS...: the log interleaves the program's output with valgrind's (both go to
# LOG); the command is shown on this script's standard error, not written into the log.
vg() {
    log=$1; shift
    echo "+ valgrind --trace-malloc=yes $* > $log" >&2
    valgrind --trace-malloc=yes "$@" > "$log" 2>&1
}

if command -v valgrind >/dev/null 2>&1; then
    vg sort.vg sort input.txt
    vg python.vg "$PY" -c "$PYPROG"
    [ $HAVE_CXX = 1 ] && vg allocs.vg ./allocs
else
    echo "valgrind not installed: no valgrind traces" >&2
fi

if [ $HAVE_MTRACE = 1 ]; then
    pre="$DEBUG $OUT/mtrace_on.so"
    MALLOC_TRACE=$OUT/sort.mtrace LD_PRELOAD="$pre" sort input.txt > /dev/null
    MALLOC_TRACE=$OUT/python.mtrace LD_PRELOAD="$pre" "$PY" -c "$PYPROG" > /dev/null
    [ $HAVE_CXX = 1 ] && MALLOC_TRACE=$OUT/allocs.mtrace LD_PRELOAD="$pre" ./allocs > /dev/null
    [ $HAVE_CXX = 1 ] && MALLOC_TRACE=$OUT/gcc.mtrace LD_PRELOAD="$pre" gcc -O2 -c -o /dev/null mtrace_on.c
    echo "+ mtrace: sort, python, allocs, gcc" >&2
else
    echo "libc_malloc_debug.so.0 or cc missing: no mtrace traces" >&2
fi

if command -v heaptrack >/dev/null 2>&1; then
    # The interpreted file (heaptrack.NAME.zst or .gz, as heaptrack is built) and the raw one.
    run heaptrack -o "$OUT/heaptrack.sort" sort input.txt > /dev/null
    run heaptrack -o "$OUT/heaptrack.python" "$PY" -c "$PYPROG" > /dev/null
    run heaptrack --raw -o "$OUT/heaptrack.sort" sort input.txt > /dev/null
else
    echo "heaptrack not installed: no heaptrack traces" >&2
fi

ls -l "$OUT"
echo "import them with, e.g.: mtf import --from valgrind $OUT/python.vg -o python.mtf" >&2
