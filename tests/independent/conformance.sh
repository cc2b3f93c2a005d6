#!/usr/bin/env bash
# Spec conformance: mtfread.py is an independent reader written from docs/format.md and
# docs/text-format.md alone (without reading src/). Its output must equal `mtf dump`, line for
# line, on every sample trace and on the hand-assembled corner cases in t/, with the same exit
# status and the same number of errors.
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
    local rpy=0 rmtf=0
    python3 "$here/mtfread.py" "${args[@]}" "$trace" > "$work/$name.py" 2> "$work/$name.py.err" || rpy=$?
    "$mtf" dump "${args[@]}" "$trace" > "$work/$name.mtf" 2> "$work/$name.mtf.err" || rmtf=$?
    # Besides the text, both must agree on the exit status and on the number of errors (one
    # `error:` line each), so that an error reported for a field the spec says is never read
    # (after a truncation, §9.2) or a reference into a damaged section (§8) is noticed.
    local epy emtf
    epy=$(grep -c '^error:' "$work/$name.py.err" || true)
    emtf=$(grep -c '^error:' "$work/$name.mtf.err" || true)
    if [ "$rpy" != "$rmtf" ] || [ "$epy" != "$emtf" ]; then
        echo "FAIL $name: exit status $rmtf (mtf) vs $rpy (reader), errors $emtf vs $epy:"
        head -10 "$work/$name.mtf.err" "$work/$name.py.err"
        fail=1
        failed=$((failed + 1))
        return
    fi
    if diff -u "$work/$name.mtf" "$work/$name.py" > "$work/$name.diff"; then
        echo "ok   $name ($(wc -l < "$work/$name.mtf") lines, $emtf errors)"
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
