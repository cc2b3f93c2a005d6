#!/usr/bin/env bash
# Spec conformance: mtfread.py is an independent reader written from docs/format.md and
# docs/text-format.md alone (without reading src/). Its output must equal `mtf dump`, line for
# line, on every sample trace and on the hand-assembled corner cases in t/.
#
# usage: tests/independent/conformance.sh [path/to/mtf]   (default: target/debug/mtf)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mtf=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/mtf}
if [ ! -x "$mtf" ]; then
    echo "conformance: no mtf binary at $mtf (run cargo build first, or pass its path)" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
passed=0
failed=0
compare() { # name trace [dtd]
    local name=$1 trace=$2 dtd=${3:-}
    local args=()
    [ -n "$dtd" ] && args=(--dtd "$dtd")
    python3 "$here/mtfread.py" "${args[@]}" "$trace" > "$work/$name.py" 2>/dev/null || true
    "$mtf" dump "${args[@]}" "$trace" > "$work/$name.mtf" 2>/dev/null || true
    if diff -u "$work/$name.mtf" "$work/$name.py" > "$work/$name.diff"; then
        echo "ok   $name ($(wc -l < "$work/$name.mtf") lines)"
        passed=$((passed + 1))
    else
        echo "FAIL $name: the independent reader and mtf dump differ:"
        head -20 "$work/$name.diff"
        fail=1
        failed=$((failed + 1))
    fi
}
for t in "$root"/traces/*.mtf; do
    compare "$(basename "$t" .mtf)" "$t"
done
for t in "$here"/t/*.mtf; do
    b=$(basename "$t" .mtf)
    d="$here/t/$b.dtd"
    [ "$b" = t7 ] && d="$here/t/t6.dtd"   # t7 is written for t6's DTD
    compare "$b" "$t" "$d"
done
echo "conformance: $passed passed, $failed failed"
[ "$fail" -eq 0 ]
