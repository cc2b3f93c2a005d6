"""Tests of the Python package metatf, over the repository's sample traces.

Every figure is checked against something the package did not compute: `mtf stats -f json`
(the command line, built by cargo: $MTF or target/debug/mtf), and tests/independent/mtfread.py,
the reader written from docs/format.md alone (its dump for record counts, its `--heap`
reading for the heap figures).
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import metatf

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "traces").glob("*.mtf"))
sys.path.insert(0, str(ROOT / "tests" / "independent"))
import mtfread  # noqa: E402  (the independent reader)

# Record types whose records are elements of tables (string tables, the streams of
# `compact --split`): their values are in the fields that refer to them, and they have no rows
# of their own (docs/query.md). Read from the DTDs by hand.
ELEMENTS = {
    "et3.mtf": {"string"},
    "hatf-split-le64.mtf": {"addr", "name"},
    "heaptrack.mtf": {"string", "traceRoot"},
    "jvm_trace.mtf": {"classname", "methodname"},
    "mtrace.mtf": {"string"},
    "tptp.mtf": {"string"},
}


def mtf_binary() -> str:
    exe = os.environ.get("MTF")
    if exe:
        return exe
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    exe = target / "debug" / "mtf"
    if not exe.exists():
        pytest.skip(f"no mtf binary at {exe}: run `cargo build` or set MTF")
    return str(exe)


def cli_stats(path: Path) -> dict:
    out = subprocess.run([mtf_binary(), "stats", "-f", "json", str(path)], check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def independent_dump(path: Path) -> list[str]:
    lines: list[str] = []
    trace = mtfread.Trace(path.read_bytes(), None)
    errors = trace.dump(lines.append)
    assert errors == [], errors
    return [line for line in lines if line and not line.startswith("%")]


def independent_heap(path: Path) -> dict[str, dict[str, int]]:
    """mtfread.py --heap: per namespace allocations, frees, bytes, leaked blocks."""
    trace = mtfread.Trace(path.read_bytes(), None)
    figures = {}
    for line in mtfread.Heap(trace).run():
        name, *pairs = line.split()
        figures[name] = {k: int(v) for k, v in (p.split("=") for p in pairs)}
    return figures


@pytest.fixture(scope="module", params=TRACES, ids=[t.name for t in TRACES])
def trace(request):
    return request.param


def test_every_trace_opens(trace):
    t = metatf.open(trace)
    assert t.path == str(trace)
    assert t.dtd.endswith(".dtd")
    assert "records" not in t.record_types or "." in t.record_types[0]
    assert repr(t).startswith("metatf.Trace(")


def test_stats_equal_the_command_line(trace):
    assert metatf.open(trace).stats() == cli_stats(trace)
    assert metatf.open(str(trace)).stats(top=1) != {} 


def test_records_and_tables_count_what_the_independent_reader_reads(trace):
    t = metatf.open(trace)
    lines = independent_dump(trace)
    counts = collections.Counter(line.split(" ", 1)[0] for line in lines)
    records = t.records()
    assert records.num_rows == len(lines)
    assert records.column("record_index").to_pylist() == list(range(len(lines)))
    assert collections.Counter(records.column("type").to_pylist()) == counts
    elements = ELEMENTS.get(trace.name, set())
    for name in t.record_types:
        table = t.table(name)
        assert table.column_names[:3] == ["record_index", "byte_offset", "section"]
        expected = 0 if name in elements else counts.get(name, 0)
        assert table.num_rows == expected, name
        if expected:
            # The rows are those records, in trace order.
            indexes = [i for i, line in enumerate(lines) if line.split(" ", 1)[0] == name]
            assert table.column("record_index").to_pylist() == indexes


def peak_from_blocks(blocks: pa.Table, namespace: str):
    """+size at alloc_record, -size at free_record, summed per data record, then a running sum:
    its maximum and the first record where it is reached."""
    b = blocks.filter(pc.and_(pc.equal(blocks["namespace"], namespace),
                              pc.is_valid(blocks["size"])))
    allocs = pa.table({"record": b["alloc_record"], "delta": pc.cast(b["size"], pa.int64())})
    freed = b.filter(pc.is_valid(b["free_record"]))
    frees = pa.table({"record": freed["free_record"],
                      "delta": pc.negate(pc.cast(freed["size"], pa.int64()))})
    deltas = pa.concat_tables([allocs, frees])
    if deltas.num_rows == 0:
        return 0, None
    per = deltas.group_by("record").aggregate([("delta", "sum")]).sort_by("record")
    live = pc.cumulative_sum(per["delta_sum"])
    peak = pc.max(live).as_py()
    if peak <= 0:
        return 0, None
    first = pc.index(live, peak).as_py()
    return peak, per["record"][first].as_py()


def test_peak_from_blocks_equals_stats(trace):
    t = metatf.open(trace)
    blocks = t.blocks()
    stats = cli_stats(trace)
    for ns in stats["namespaces"]:
        if not ns.get("sized"):
            continue
        bytes_, record = peak_from_blocks(blocks, ns["name"])
        assert bytes_ == ns["peak"]["bytes"], ns["name"]
        if bytes_:
            assert record == ns["peak"]["at"]["data_record"], ns["name"]


def test_blocks_agree_with_the_independent_heap_reading(trace):
    try:
        figures = independent_heap(trace)
    except mtfread.Unsupported:
        pytest.skip("the independent reader does not interpret this DTD's heap")
    blocks = metatf.open(trace).blocks()
    for name, f in figures.items():
        mine = blocks.filter(pc.equal(blocks["namespace"], name))
        assert mine.num_rows == f["allocations"], name
        leaked = mine.filter(pc.is_null(mine["free_record"])).num_rows
        assert leaked == f["leaked_blocks"], name
        sized = pc.sum(mine["size"]).as_py() or 0
        if f["bytes_allocated"]:
            assert sized == f["bytes_allocated"], name


def test_events_reference_records():
    t = metatf.open(ROOT / "traces" / "android.mtf")
    events = t.events()
    records = t.records()
    assert events.num_rows > 0
    types = records.column("type").to_pylist()
    for i in events.column("record_index").to_pylist():
        assert types[i] in {"alloc", "free", "realloc", "reallocAlloc", "reallocFree",
                            "reallocAllocFree"}


def test_tables_come_without_a_copy():
    """The buffers are the library's: pyarrow allocates nothing to make the tables (a
    conversion through Python objects would allocate every column from its pool)."""
    t = metatf.open(ROOT / "traces" / "android.mtf")
    t.blocks()  # pyarrow's lazily made state, once
    before = pa.total_allocated_bytes()
    tables = [t.blocks(), t.events(), t.records(), t.table("alloc")]
    assert all(x.num_rows > 0 for x in tables)
    assert pa.total_allocated_bytes() == before
    # And the data are there: the sizes of the allocations are the trace's.
    assert pc.sum(tables[3]["size"]).as_py() > 0


def test_batches_stream_the_same_rows():
    t = metatf.open(ROOT / "traces" / "android.mtf")
    for name in ["blocks", "events", "records", "alloc"]:
        reader = t.batches(name, batch_rows=7)
        assert isinstance(reader, pa.RecordBatchReader)
        batches = list(reader)
        assert all(b.num_rows <= 7 for b in batches)
        whole = t.batches(name).read_all()
        assert pa.Table.from_batches(batches, schema=reader.schema).equals(whole)
    assert t.batches("blocks").read_all().equals(t.blocks())
    # Site names that come after the rows needing them (an imported heaptrack trace's tables
    # are at its end): read ahead in a stream, read again for a table; the same either way.
    for path in TRACES:
        t2 = metatf.open(path)
        for name in ("blocks", "events"):
            assert t2.batches(name).read_all().equals(getattr(t2, name)()), (path, name)
    hb = metatf.open(ROOT / "traces" / "heaptrack.mtf").blocks()
    named = hb.filter(pc.is_valid(hb["site"]))
    assert named.num_rows > 0 and named["site_name"].null_count == 0
    # A reader dropped before its end stops its thread.
    reader = t.batches("records", batch_rows=1)
    next(iter(reader))
    del reader


def test_compressed_traces_read_as_the_command_line_reads_them(tmp_path):
    src = ROOT / "traces" / "android.mtf"
    gz = tmp_path / "android.mtf.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    shutil.copy(ROOT / "dtds" / "hatf-android.dtd", tmp_path)
    t = metatf.open(gz)
    assert t.stats() == cli_stats(gz)
    assert t.blocks().equals(metatf.open(src).blocks())


def test_a_missing_trace_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        metatf.open(tmp_path / "none.mtf")
    assert isinstance(e.value, metatf.TraceNotFoundError)
    assert isinstance(e.value, metatf.Error)
    assert e.value.code == "mtf::io::open"
    assert e.value.path == str(tmp_path / "none.mtf")


def test_a_missing_dtd_is_a_dtd_error(tmp_path):
    with pytest.raises(metatf.DtdError) as e:
        metatf.open(ROOT / "traces" / "android.mtf", dtd=tmp_path / "none.dtd")
    assert e.value.code.startswith("mtf::")


def test_a_damaged_trace_raises_with_a_code_and_an_offset(tmp_path):
    data = (ROOT / "traces" / "hatf-le32.mtf").read_bytes()
    cut = tmp_path / "cut.mtf"
    cut.write_bytes(data[: len(data) - 3])
    with pytest.raises(metatf.DecodeError) as e:
        metatf.open(cut, dtd=ROOT / "dtds" / "hatf10.dtd")
    err = e.value
    assert isinstance(err, metatf.Error)
    assert err.code is not None and err.code.startswith("mtf::")
    assert err.path == str(cut)
    assert err.offset is not None and 0 <= err.offset <= len(data)
    # Salvaged, the records that can be trusted are read.
    t = metatf.open(cut, dtd=ROOT / "dtds" / "hatf10.dtd", salvage=True)
    assert 0 < t.records().num_rows < metatf.open(ROOT / "traces" / "hatf-le32.mtf").records().num_rows


def test_a_record_that_cannot_be_decoded(tmp_path):
    """An intact container with a record whose tag is unknown: every table raises at it (with
    its offset and code) unless the trace is opened with salvage=True."""
    src = ROOT / "traces" / "hatf-le32.mtf"
    dtd = ROOT / "dtds" / "hatf10.dtd"
    whole = metatf.open(src)
    records = whole.records()
    types = records.column("type").to_pylist()
    k = types.index("alloc", types.index("alloc") + 2)  # an allocation in the middle
    offset = records.column("byte_offset")[k].as_py()
    data = bytearray(src.read_bytes())
    data[offset] = 0xEE
    bad = tmp_path / "bad.mtf"
    bad.write_bytes(bytes(data))
    t = metatf.open(bad, dtd=dtd)
    for make in (t.records, t.events, t.blocks, lambda: t.table("alloc"),
                 lambda: t.batches("alloc")):
        with pytest.raises(metatf.DecodeError) as e:
            make()
        assert e.value.offset == offset
        assert e.value.code == "mtf::trace::unknown_tag"
        assert e.value.path == str(bad)
        assert "salvage=True" in str(e.value)
    # A stream whose schema is known before the first row ends with pyarrow's error, which
    # names the code.
    with pytest.raises(pa.ArrowInvalid, match="mtf::trace::unknown_tag"):
        t.batches("blocks").read_all()
    salvaged = metatf.open(bad, dtd=dtd, salvage=True)
    assert salvaged.records().num_rows < records.num_rows
    assert 0 < salvaged.table("alloc").num_rows < whole.table("alloc").num_rows
    assert salvaged.blocks().num_rows < whole.blocks().num_rows


def test_a_header_that_is_not_a_trace(tmp_path):
    bad = tmp_path / "bad.mtf"
    bad.write_bytes(b"not a trace at all, just some text\n" * 4)
    with pytest.raises(metatf.DecodeError) as e:
        metatf.open(bad)
    assert e.value.code.startswith("mtf::")
    assert e.value.offset == 0


def test_an_unknown_table_is_a_key_error():
    t = metatf.open(ROOT / "traces" / "android.mtf")
    with pytest.raises(KeyError) as e:
        t.table("nonesuch")
    assert isinstance(e.value, metatf.TableError)
    assert "alloc" in str(e.value)
    with pytest.raises(metatf.TableError):
        t.batches("nonesuch")


def test_version():
    assert metatf.__version__ == "0.1.0"
    assert isinstance(metatf.HAS_SQL, bool)


@pytest.mark.skipif(not metatf.HAS_SQL, reason="built without the cargo feature sql")
def test_sql_counts_the_records():
    for path in TRACES:
        t = metatf.open(path)
        result = t.sql("SELECT count(*) AS n FROM records")
        assert result.column(0).to_pylist() == [t.records().num_rows]


def _has_duckdb() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(metatf.HAS_SQL or _has_duckdb(),
                    reason="built with the cargo feature sql, or DuckDB is installed")
def test_sql_without_either_engine_says_how_to_get_one():
    with pytest.raises(metatf.SqlError) as e:
        metatf.open(ROOT / "traces" / "android.mtf").sql("SELECT 1")
    assert "feature `sql`" in str(e.value)
    assert "pip install duckdb" in str(e.value)


@pytest.mark.skipif(not _has_duckdb(), reason="DuckDB is not installed")
def test_sql_by_duckdb_counts_the_records_and_finds_the_peak_of_stats():
    for path in TRACES:
        t = metatf.open(path)
        result = t.sql("SELECT count(*) AS n FROM records", engine="duckdb")
        assert result.column(0).to_pylist() == [t.records().num_rows], path
    # The peak of live bytes over `blocks` (docs/query.md's query), against stats().
    t = metatf.open(ROOT / "traces" / "android.mtf")
    peak = t.sql(
        "SELECT max(live) AS peak FROM (SELECT sum(delta) OVER (ORDER BY r, o "
        "ROWS UNBOUNDED PRECEDING) AS live FROM ("
        "SELECT alloc_record AS r, 1 AS o, CAST(size AS BIGINT) AS delta FROM blocks UNION ALL "
        "SELECT free_record AS r, 0 AS o, -CAST(size AS BIGINT) AS delta FROM blocks "
        "WHERE free_record IS NOT NULL))",
        engine="duckdb",
    ).column(0).to_pylist()[0]
    spaces = t.stats()["namespaces"]
    assert int(peak) == max(int(n["peak"]["bytes"]) for n in spaces)
    # A record type's table, by its name.
    sizes = t.sql("SELECT sum(size) AS s FROM alloc", engine="duckdb").column(0).to_pylist()
    assert int(sizes[0]) == pc.sum(t.table("alloc").column("size")).as_py()


@pytest.mark.skipif(not (metatf.HAS_SQL and _has_duckdb()),
                    reason="needs both the feature sql and DuckDB")
def test_sql_engines_agree():
    q = ("SELECT kind, count(*) AS n, sum(size) AS s FROM events GROUP BY kind ORDER BY kind")
    for path in TRACES:
        t = metatf.open(path)
        try:
            ours = t.sql(q, engine="datafusion")
        except metatf.SqlError:
            continue  # no allocations: no events table
        theirs = t.sql(q, engine="duckdb")
        rows = lambda tab: [tuple(None if v is None else int(v) if not isinstance(v, str) else v
                                  for v in r.values()) for r in tab.to_pylist()]
        assert rows(ours) == rows(theirs), path


@pytest.mark.skipif(not _has_duckdb(), reason="DuckDB is not installed")
def test_sql_errors_of_duckdb_and_an_unknown_engine_are_sql_errors():
    t = metatf.open(ROOT / "traces" / "android.mtf")
    with pytest.raises(metatf.SqlError) as e:
        t.sql("SELEC 1", engine="duckdb")
    assert e.value.code == "mtf::python::duckdb"
    assert "events" in str(e.value)
    with pytest.raises(metatf.SqlError) as e:
        t.sql("SELECT 1", engine="sqlite")
    assert e.value.code == "mtf::python::engine"
    assert "datafusion and duckdb" in str(e.value)


@pytest.mark.skipif(not metatf.HAS_SQL, reason="built without the cargo feature sql")
def test_sql_error_is_an_sql_error_with_the_library_code():
    with pytest.raises(metatf.SqlError) as e:
        metatf.open(ROOT / "traces" / "android.mtf").sql("SELEC 1")
    assert e.value.code.startswith("mtf::sql::"), e.value.code
