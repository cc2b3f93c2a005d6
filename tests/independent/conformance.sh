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
    # `error:` line from the reader, one `×` line in mtf's style), so that an error reported for a field the spec says is never read
    # (after a truncation, §9.2) or a reference into a damaged section (§8) is noticed.
    local epy emtf
    epy=$(grep -c '^error:' "$work/$name.py.err" || true)
    # (mtf's messages about the container as a whole, code mtf::trace::invalid, are the
    # reader's `trace error:` lines, which are not counted either.)
    emtf=$(awk '/^mtf::/ { code = $1 } /^  × / && code != "mtf::trace::invalid" { n++ } END { print n + 0 }' "$work/$name.mtf.err")
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
    case $b in   # traces written for another case's DTD
        t7) d="$here/t/t6.dtd" ;;
        t14 | t15) d="$here/t/t12.dtd" ;;
        t16) d="$here/t/t11.dtd" ;;
    esac
    compare "$b" "$t" "$d"
done
# Expression levels (format.md §3.4, §16): t19.dtd's three width expressions have 64 levels each
# and are read above; one level more in any of them is refused by both readers (status 3).
for shape in v w u; do
    case $shape in
        v) edit='/^v :/ s/d\.width = 0 + /d.width = 0 + 0 + /' ;;
        w) edit='/^w :/ { s/d\.width = (/d.width = ((/; s/); }/)); }/; }' ;;
        u) edit='/^u :/ s/d\.width = 1\*/d.width = 1*1*/' ;;
    esac
    sed "$edit" "$here/t/t19.dtd" > "$work/t19-$shape.dtd"
    if cmp -s "$here/t/t19.dtd" "$work/t19-$shape.dtd"; then
        echo "FAIL t19-$shape-65-levels: the edit changed nothing"
        fail=1
        failed=$((failed + 1))
        continue
    fi
    rpy=0 rmtf=0
    python3 "$here/mtfread.py" --dtd "$work/t19-$shape.dtd" "$here/t/t19.mtf" > /dev/null 2>&1 || rpy=$?
    "$mtf" dump --dtd "$work/t19-$shape.dtd" "$here/t/t19.mtf" > /dev/null 2>&1 || rmtf=$?
    if [ "$rpy" = 3 ] && [ "$rmtf" = 3 ]; then
        echo "ok   t19-$shape-65-levels (refused by both)"
        passed=$((passed + 1))
    else
        echo "FAIL t19-$shape-65-levels: exit status $rmtf (mtf) vs $rpy (reader), both should be 3"
        fail=1
        failed=$((failed + 1))
    fi
done
# Live sets chosen by the encoder (format.md §13): t/live.txt, an alloc/free trace for
# hatf10.dtd, packed and re-encoded with `mtf compact --live`, which must declare live/1.
if "$mtf" pack "$here/t/live.txt" -o "$work/in-live-plain.mtf" 2> "$work/live.err" &&
    "$mtf" compact "$work/in-live-plain.mtf" -o "$work/in-live-encoded.mtf" --live 2>> "$work/live.err" &&
    "$mtf" info "$work/in-live-encoded.mtf" > "$work/live.info" 2>> "$work/live.err" &&
    grep -q '^extensions *live/1' "$work/live.info"; then
    compare live-plain "$work/in-live-plain.mtf"
    compare live-encoded "$work/in-live-encoded.mtf"
else
    echo "FAIL live-encoded: mtf pack, compact --live or info failed, or no live/1 in the header:"
    head -10 "$work/live.err"
    fail=1
    failed=$((failed + 1))
fi
# The DTD name's safety rule (format.md §10): a header name that does not end in `.dtd` is
# refused, even where a file of that name lies beside the trace; `--dtd` still reads it.
mkdir -p "$work/noext"
python3 - "$root/traces/hatf-le32.mtf" "$work/noext/t.mtf" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.find(b'hatf10.dtd')
b[i:i + 10] = b'hatf10.txt'
open(sys.argv[2], 'wb').write(b)
PY
cp "$root/dtds/hatf10.dtd" "$work/noext/hatf10.txt"
compare dtd-name-not-dtd "$work/noext/t.mtf"
compare dtd-name-not-dtd-explicit "$work/noext/t.mtf" "$work/noext/hatf10.txt"
# Heap figures (format.md §14, docs/stats.md): the reader's `--heap` figures per namespace of
# ids against `mtf stats -f json`, on the sample traces and the analysis spec cases of
# tests/data/spec-cases (their DTD is `t.dtd` beside them). A trace whose declarations the
# reader does not model (lookups `NS.G.value`, redefinitions: exit 4) is skipped and counted.
skipped=0
heap() { # name trace [dtd]
    local name=$1 trace=$2 dtd=${3:-}
    local args=()
    [ -n "$dtd" ] && args=(--dtd "$dtd")
    local rpy=0
    python3 "$here/mtfread.py" --heap "${args[@]}" "$trace" > "$work/$name.heap.py" 2> "$work/$name.heap.err" || rpy=$?
    if [ "$rpy" = 4 ]; then
        skipped=$((skipped + 1))
        return
    fi
    if ! "$mtf" stats -f json "${args[@]}" "$trace" 2>> "$work/$name.heap.err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
F = ("allocations", "frees", "moves", "bytes_allocated", "bytes_freed", "temporary")
# Sums beyond 64 bits are decimal strings in the JSON (docs/stats.md).
for line in sorted("%s %s leaked_blocks=%d" % (n["name"], " ".join("%s=%d" % (f, int(n[f])) for f in F),
                                              int(n["leaked"]["blocks"])) for n in d["namespaces"]):
    print(line)
' > "$work/$name.heap.mtf" || [ "$rpy" != 0 ]; then
        echo "FAIL heap $name: reader exit $rpy, or mtf stats failed:"
        head -5 "$work/$name.heap.err"
        fail=1
        failed=$((failed + 1))
    elif diff -u "$work/$name.heap.mtf" "$work/$name.heap.py" > "$work/$name.heap.diff"; then
        echo "ok   heap $name"
        passed=$((passed + 1))
    else
        echo "FAIL heap $name: the reader's heap figures and mtf stats differ:"
        head -20 "$work/$name.heap.diff"
        fail=1
        failed=$((failed + 1))
    fi
}
for t in "$root"/traces/*.mtf; do
    heap "$(basename "$t" .mtf)" "$t"
done
for t in "$root"/tests/data/spec-cases/analysis-*/*.mtf; do
    heap "$(basename "$(dirname "$t")")-$(basename "$t" .mtf)" "$t" "$(dirname "$t")/t.dtd"
done
echo "heap figures: $skipped trace(s) skipped (declarations the reader does not model)"
# The tables file beside a seek index (format.md §15.6): read by the reader from the spec, it
# must give the sections the reader itself finds to be tables (§8), on every sample trace that
# gets one (a trace whose tables the DTD gives gets none: then nothing to compare).
for t in "$root"/traces/*.mtf; do
    name=$(basename "$t" .mtf)
    if ! "$mtf" index -q --every 64 "$t" -o "$work/$name.idx" > /dev/null 2> "$work/$name.idx.err"; then
        echo "FAIL tables $name: mtf index failed:"
        head -5 "$work/$name.idx.err"
        fail=1
        failed=$((failed + 1))
    elif [ -f "$work/$name.idx.tables" ]; then
        if python3 "$here/mtfread.py" --tables --file "$work/$name.idx.tables" "$t" > "$work/$name.tables" 2>&1; then
            echo "ok   tables $name ($(head -1 "$work/$name.tables"))"
            passed=$((passed + 1))
        else
            echo "FAIL tables $name: the tables file and the reader differ:"
            head -5 "$work/$name.tables"
            fail=1
            failed=$((failed + 1))
        fi
    fi
done
echo "conformance: $passed passed, $failed failed"
[ "$fail" -eq 0 ]
