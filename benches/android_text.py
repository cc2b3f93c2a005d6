#!/usr/bin/env python3
"""Android memory_replay text (stdin) -> the text form of a Meta-TF trace (stdout), for
`mtf pack`. `--dtd android` keeps every field (benches/android.dtd); `--dtd hatf` writes HATF 1.0
(dtds/hatf10.dtd): malloc/calloc/memalign -> alloc (calloc size = nmemb*size), realloc ->
realloc (the new size is dropped: HATF's realloc has none), free -> free, thread_done ->
destroyThread, with the thread in `thread` (switched from default 0 to a 4-byte field)."""
import sys

def main():
    kind = sys.argv[sys.argv.index("--dtd") + 1] if "--dtd" in sys.argv else "android"
    out = sys.stdout
    if kind == "android":
        out.write('%mtf 1 dtd="android.dtd" class=32 order=little\nsection number=1\n')
    else:
        out.write('%mtf 1 dtd="hatf10.dtd" class=32 order=little\nsection number=1\n')
        for r in ("alloc", "realloc", "free", "destroyThread"):
            out.write(f"metadata {r}.thread none\nmetadata {r}.thread width 4\n")
    for line in sys.stdin:
        tid, rest = line.split(":", 1)
        f = rest.split()
        op, ptr = f[0], int(f[1], 16)
        a = [int(x, 0) for x in f[2:]]
        if kind == "android":
            if op == "malloc":
                out.write(f"malloc tid={tid} ptr={ptr} size={a[0]}\n")
            elif op == "calloc":
                out.write(f"calloc tid={tid} ptr={ptr} nmemb={a[0]} size={a[1]}\n")
            elif op == "memalign":
                out.write(f"memalign tid={tid} ptr={ptr} alignment={a[0]} size={a[1]}\n")
            elif op == "realloc":
                out.write(f"realloc tid={tid} ptr={ptr} old={int(f[2], 16)} size={f[3]}\n")
            elif op == "free":
                out.write(f"free tid={tid} ptr={ptr}\n")
            elif op == "thread_done":
                out.write(f"thread_done tid={tid} ptr={ptr}\n")
        else:
            e = 'vfield.data=""'
            if op in ("malloc", "calloc", "memalign"):
                size = a[0] * a[1] if op == "calloc" else a[-1]
                out.write(f"alloc size={size} address={ptr} thread={tid} {e}\n")
            elif op == "realloc":
                out.write(f"realloc address={ptr} address_2={int(f[2], 16)} thread={tid} {e}\n")
            elif op == "free":
                out.write(f"free address={ptr} thread={tid} {e}\n")
            elif op == "thread_done":
                out.write(f"destroyThread thread={tid} {e}\n")

main()
