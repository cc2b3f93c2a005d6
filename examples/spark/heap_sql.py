#!/usr/bin/env python3
"""The peak of live bytes per namespace (and its data record), and the allocation sites by bytes
allocated and by bytes live at the peak, in SQL over the `blocks` table of `mtf export --to
parquet --table blocks [--partition-by records:N|time:SPAN]` - with Apache Spark or DuckDB.

    python heap_sql.py --engine spark  DIR [DIR...] [--top 10] [--json OUT] [--master local[*]]
    spark-submit --master yarn heap_sql.py --engine spark hdfs://nn/traces/x
    python heap_sql.py --engine duckdb DIR [DIR...] [--top 10] [--json OUT]

DIR is an export's folder (its `blocks` folder of Hive parts, or its `blocks.parquet`); with
Spark it may be any path Spark reads: `hdfs://nn/traces/x`, `s3a://bucket/traces/x`. Several
DIRs are read one after the other by one session (Spark starts once). `--json` writes, per DIR,
every namespace's peak and every site's figures (not only the top ones), for a comparison with
`mtf stats -f json --top N` (examples/spark/compare.py).

The same SQL text runs on both engines (it keeps to what both accept). The running sum of the
live bytes is computed in chunks of data records, so that no step needs the whole table in one
task: per-record deltas (+size where a lifetime starts, -size where it ends), per-chunk totals,
the chunks' offsets (a running sum over a few rows per namespace), then a running sum within
each chunk - which a cluster spreads over its executors, chunk by chunk.
"""
import argparse
import json
import os
import sys
import time

# Data records per chunk of the running sum: the work of one task at most.
CHUNK = 1 << 20

DELTAS = """
WITH deltas AS (
        SELECT namespace, CAST(alloc_record AS BIGINT) AS record,
               CAST(size AS DECIMAL(38, 0)) AS delta
        FROM blocks WHERE size IS NOT NULL
        UNION ALL
        SELECT namespace, CAST(free_record AS BIGINT) AS record,
               -CAST(size AS DECIMAL(38, 0)) AS delta
        FROM blocks WHERE size IS NOT NULL AND free_record IS NOT NULL),
     steps AS (
        SELECT namespace, record, CAST(floor(record / {chunk}) AS BIGINT) AS chunk,
               sum(delta) AS delta
        FROM deltas GROUP BY namespace, record),
     chunks AS (
        SELECT namespace, chunk, sum(delta) AS total FROM steps GROUP BY namespace, chunk),
     offsets AS (
        SELECT namespace, chunk,
               sum(total) OVER (PARTITION BY namespace ORDER BY chunk
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - total
                   AS before
        FROM chunks),
     live AS (
        SELECT s.namespace, s.record,
               o.before + sum(s.delta) OVER (PARTITION BY s.namespace, s.chunk ORDER BY s.record
                                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                   AS bytes
        FROM steps s JOIN offsets o ON s.namespace = o.namespace AND s.chunk = o.chunk),
     peaks AS (SELECT namespace, max(bytes) AS bytes FROM live GROUP BY namespace)
SELECT p.namespace, p.bytes, min(l.record) AS record
FROM peaks p JOIN live l ON l.namespace = p.namespace AND l.bytes = p.bytes
GROUP BY p.namespace, p.bytes
ORDER BY p.namespace
"""

SITES = """
SELECT namespace, site, min(site_name) AS name, count(*) AS allocations,
       sum(CAST(size AS DECIMAL(38, 0))) AS bytes
FROM blocks GROUP BY namespace, site
"""

# The blocks alive at a namespace's peak: allocated at or before its record, not yet ended
# there (a lifetime that ends at the peak's record is gone after it).
AT_PEAK = """
SELECT site, sum(CAST(size AS DECIMAL(38, 0))) AS bytes, count(*) AS blocks
FROM blocks
WHERE namespace = '{namespace}' AND size IS NOT NULL
  AND CAST(alloc_record AS BIGINT) <= {record}
  AND (free_record IS NULL OR CAST(free_record AS BIGINT) > {record})
GROUP BY site
"""


def number(v):
    """An engine's integer or decimal as a Python int (None stays None)."""
    return None if v is None else int(v)


class Spark:
    def __init__(self, master):
        from pyspark.sql import SparkSession

        builder = SparkSession.builder
        # Under spark-submit the master is its --master; in plain python, local[*].
        if master:
            builder = builder.master(master)
        self.spark = (
            builder.appName("mtf heap_sql")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", os.environ.get("SPARK_PARTITIONS", "8"))
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.version = "Spark " + self.spark.version

    def load(self, d):
        path = d + "/blocks" if not d.endswith(".parquet") else d
        if not path.startswith(("hdfs:", "s3a:", "s3:", "gs:", "abfs:")) and not os.path.exists(
            path
        ):
            path = d + "/blocks.parquet"
        self.spark.read.parquet(path).createOrReplaceTempView("blocks")

    def unload(self):
        self.spark.catalog.dropTempView("blocks")

    def rows(self, sql):
        return [tuple(r) for r in self.spark.sql(sql).collect()]

    def close(self):
        self.spark.stop()


class DuckDB:
    def __init__(self):
        import duckdb

        self.con = duckdb.connect()
        self.version = "DuckDB " + duckdb.__version__

    def load(self, d):
        if os.path.isdir(os.path.join(d, "blocks")):
            src = f"read_parquet('{d}/blocks/*/*.parquet', hive_partitioning = true)"
        else:
            src = f"read_parquet('{d}/blocks.parquet')"
        self.con.execute(f"CREATE VIEW blocks AS SELECT * FROM {src}")

    def unload(self):
        self.con.execute("DROP VIEW blocks")

    def rows(self, sql):
        return self.con.sql(sql).fetchall()

    def close(self):
        self.con.close()


def figures(engine, d):
    """Every namespace's peak and every site's figures over the `blocks` of export `d`."""
    engine.load(d)
    out = {}
    for ns, peak, record in engine.rows(DELTAS.format(chunk=CHUNK)):
        out[ns] = {"peak_bytes": number(peak), "peak_record": number(record), "sites": {}}
    for ns, site, name, allocations, size in engine.rows(SITES):
        n = out.setdefault(ns, {"peak_bytes": None, "peak_record": None, "sites": {}})
        n["sites"][str(number(site))] = {
            "site": number(site),
            "name": name,
            "allocations": number(allocations),
            "bytes_allocated": number(size),
            "peak_bytes": 0,
            "peak_blocks": 0,
        }
    for ns, n in out.items():
        if n["peak_record"] is None:
            continue
        q = AT_PEAK.format(namespace=ns.replace("'", "''"), record=n["peak_record"])
        for site, size, blocks in engine.rows(q):
            s = n["sites"][str(number(site))]
            s["peak_bytes"], s["peak_blocks"] = number(size), number(blocks)
    engine.unload()
    return out


def show(d, namespaces, top):
    print(f"{d}:")
    for ns, n in sorted(namespaces.items()):
        if n["peak_bytes"] is None:
            continue
        print(f"  namespace {ns}: peak {n['peak_bytes']} live bytes at data record {n['peak_record']}")
        sites = list(n["sites"].values())
        for key, title in [("bytes_allocated", "bytes allocated"), ("peak_bytes", "bytes live at the peak")]:
            ranked = sorted(sites, key=lambda s: (-(s[key] or 0), s["site"] is None, s["site"] or 0))
            shown = [s for s in ranked[:top] if s[key]]
            print(f"    top {len(shown)} sites by {title}:")
            for s in shown:
                name = s["name"] if s["name"] is not None else "(no site)" if s["site"] is None else f"site {s['site']}"
                print(f"      {s[key]:>14}  {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    ap.add_argument("--engine", choices=["spark", "duckdb"], required=True)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", help="write every namespace's figures here")
    ap.add_argument(
        "--master",
        default=os.environ.get("SPARK_MASTER"),
        help="Spark's master (default: spark-submit's, else local[*])",
    )
    a = ap.parse_args()
    started = time.time()
    engine = Spark(a.master) if a.engine == "spark" else DuckDB()
    ready = time.time()
    print(f"{engine.version}: started in {ready - started:.1f} s")
    out = {"engine": engine.version, "start_seconds": round(ready - started, 2), "exports": {}}
    for d in a.dirs:
        t = time.time()
        namespaces = figures(engine, d.rstrip("/"))
        seconds = time.time() - t
        out["exports"][d] = {"seconds": round(seconds, 2), "namespaces": namespaces}
        show(d, namespaces, a.top)
        print(f"  ({seconds:.1f} s)")
    engine.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
