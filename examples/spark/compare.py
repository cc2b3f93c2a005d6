#!/usr/bin/env python3
"""Sets what heap_sql.py found over an export against `mtf stats -f json --top N` of the trace:
per namespace with byte counts, the peak's bytes and data record; per allocation site, its
allocations, bytes allocated, and bytes and blocks live at the peak - every site, not only the
top ten, so that ties in a ranking cannot hide a difference. Exit status 1 on any difference.

    python compare.py STATS.json ENGINE.json EXPORT_DIR
"""
import json
import sys


def main():
    stats_path, engine_path, export = sys.argv[1:4]
    with open(stats_path) as f:
        stats = json.load(f)
    with open(engine_path) as f:
        run = json.load(f)
    got = run["exports"][export]["namespaces"]
    diffs = []
    compared = 0
    peaks = 0
    for ns in stats["namespaces"]:
        if not ns["sized"]:
            continue
        name = ns["name"]
        g = got.get(name)
        peak, at = ns["peak"]["bytes"], ns["peak"]["at"]["data_record"]
        if g is None or g["peak_bytes"] is None:
            # No lifetime with a size: the engine has no row; stats says 0.
            if ns["allocations"] > 0 and peak != 0:
                diffs.append(f"{name}: no rows in blocks, mtf stats peak {peak}")
            continue
        peaks += 1
        if (g["peak_bytes"], g["peak_record"]) != (peak, at):
            diffs.append(
                f"{name}: peak {g['peak_bytes']} at data record {g['peak_record']}, "
                f"mtf stats {peak} at {at}"
            )
        # `by_allocated` lists every site when --top is at least their count.
        sites = ns["sites"]["by_allocated"]
        if len(sites) != ns["sites"]["count"]:
            diffs.append(f"{name}: mtf stats listed {len(sites)} of {ns['sites']['count']} sites")
        want = {str(s["site"]): s for s in sites}
        if set(want) != set(g["sites"]):
            only_stats = sorted(set(want) - set(g["sites"]))[:5]
            only_sql = sorted(set(g["sites"]) - set(want))[:5]
            diffs.append(f"{name}: sites only in mtf stats {only_stats}, only in SQL {only_sql}")
        for key, s in want.items():
            e = g["sites"].get(key)
            if e is None:
                continue
            for field in ["allocations", "bytes_allocated", "peak_bytes", "peak_blocks"]:
                if (e[field] or 0) != s[field]:
                    diffs.append(f"{name}: site {key} ({s['name']}): {field} {e[field]}, mtf stats {s[field]}")
            compared += 1
    for d in diffs[:20]:
        print(f"DIFFERENT {export}: {d}")
    if not diffs:
        print(f"equal: {export}: {peaks} peak(s), {compared} site(s) ({run['engine']})")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
