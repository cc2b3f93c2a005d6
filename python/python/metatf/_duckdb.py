"""``Trace.sql`` without the native engine: DuckDB over the Arrow tables a query names.

A package built without the cargo feature ``sql`` (the default ``pip install``: DataFusion's
release build is long) still answers SQL when DuckDB is installed (``pip install duckdb``, a
prebuilt wheel): each table the query names (``records``, ``events``, ``blocks``, a record
type's table) is made once as a ``pyarrow.Table`` and registered with an in-memory DuckDB.
Unlike the native engine, the tables are made whole before the query runs (no pushdown, no
partitions at the seek index's checkpoints): memory is that of the tables named.
"""

from __future__ import annotations

import re
from typing import Any

from ._errors import Error, SqlError

_HEAP = ("records", "events", "blocks")


def _named(query: str, names: list[str]) -> list[str]:
    """The table names that occur in the query as words (case-insensitive; a quoted name
    counts too)."""
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", query)}
    parts = {p for w in words for p in w.split(".")}
    return [n for n in names if n.lower() in words or n.lower() in parts]


def sql(trace: Any, query: str) -> Any:
    """The result of ``query`` over ``trace``'s tables as a ``pyarrow.Table``, by DuckDB."""
    try:
        import duckdb
    except ImportError:
        raise SqlError(
            "this build of metatf has no SQL engine of its own (the cargo feature `sql`), and "
            "DuckDB, which it uses instead, is not installed: `pip install duckdb`, or build "
            "the package with the feature sql (docs/python.md)",
            code="mtf::python::no_sql",
            path=trace.path,
        ) from None
    con = duckdb.connect()
    types = [n for n in trace.record_types if n not in _HEAP]
    for name in _named(query, list(_HEAP) + types):
        try:
            if name in _HEAP:
                table = getattr(trace, name)()
            else:
                table = trace.table(name)
        except Error:
            # A trace without allocations has no events or blocks: the query then fails on
            # the name, as the native engine's does.
            continue
        con.register(name, table)
    try:
        result = con.sql(query)
        if result is None:  # a statement without rows (SET, CREATE ...)
            import pyarrow

            return pyarrow.table({})
        # DuckDB 2 names it to_arrow_table; DuckDB 1 arrow.
        fetch = getattr(result, "to_arrow_table", None) or result.arrow
        return fetch()
    except duckdb.Error as e:
        raise SqlError(
            f"{trace.path}: {e} (the query ran in DuckDB; the tables are records, events, "
            f"blocks{''.join(', ' + n for n in types)})",
            code="mtf::python::duckdb",
            path=trace.path,
        ) from None
