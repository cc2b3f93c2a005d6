"""Type hints of the extension module metatf._metatf (re-exported by metatf)."""

import os
from typing import Any, Dict, List, Optional, Union

import pyarrow

__version__: str
"""The package's version (that of the metatf library it was built with)."""

HAS_SQL: bool
"""Whether this build has the SQL engine (``Trace.sql``): the cargo feature ``sql``."""

_Path = Union[str, "os.PathLike[str]"]

def open(path: _Path, dtd: Optional[_Path] = None, *, salvage: bool = False) -> "Trace":
    """Open a trace with its DTD.

    ``path``: a trace file, compressed or not (gzip, zstd, xz, bzip2: read as ``mtf`` reads
    them). ``dtd``: a DTD file to use instead of the one the header names (found beside the
    trace, in ``MTF_DTD_PATH``, or built into the library). ``salvage``: open a damaged trace
    with the regions that can be trusted, as ``mtf`` does; by default a damaged trace raises
    :class:`metatf.DecodeError`.

    Raises :class:`metatf.TraceNotFoundError` (a :class:`FileNotFoundError`),
    :class:`metatf.OpenError`, :class:`metatf.DtdError`, :class:`metatf.DecodeError`.
    """

class Trace:
    """A trace opened with its DTD. Every table is read from the trace when asked for."""

    @property
    def path(self) -> str:
        """The path given to :func:`open`."""
    @property
    def dtd(self) -> str:
        """The name of the DTD the trace was read with."""
    @property
    def record_types(self) -> List[str]:
        """The record types that have a table (all but ``section`` and ``metadata``), named as
        ``mtf export`` names their files: ``RECORD``, or ``SECTION.RECORD`` where two sections
        define a record type of that name (or it is named ``events`` or ``blocks``)."""
    def table(self, name: str, *, batch_rows: int = 65536) -> pyarrow.Table:
        """The records of one record type (a name of :attr:`record_types`), as
        ``mtf export --to arrow`` writes them: ``record_index``, ``byte_offset``, ``section``,
        then one column per field with its interpreted value. Raises :class:`metatf.TableError`
        (a :class:`KeyError`) for an unknown name."""
    def records(self, *, batch_rows: int = 65536) -> pyarrow.Table:
        """One row per record, in trace order: ``record_index``, ``byte_offset``, ``section``,
        ``type`` (the record type's name, dictionary-encoded)."""
    def events(self, *, batch_rows: int = 65536) -> pyarrow.Table:
        """One row per heap event (``kind``, ``namespace``, ``id``, ``size``, ``record``,
        ``time``, ``thread``, ``site``, ...): docs/query.md, *events*."""
    def blocks(self, *, batch_rows: int = 65536) -> pyarrow.Table:
        """One row per block lifetime (``namespace``, ``id``, ``size``, ``alloc_record``,
        ``free_record`` (null while alive at the end), ``alloc_time``, ``free_time``,
        ``thread``, ``site``, ...): docs/query.md, *blocks*."""
    def batches(self, name: str, *, batch_rows: int = 65536) -> pyarrow.RecordBatchReader:
        """A table as a stream of record batches, decoded on a thread of its own while it is
        read (a few batches in memory, whatever the trace's length): ``records``, ``events``,
        ``blocks``, or a record type's name. An error met after the schema was given ends the
        stream with ``pyarrow.ArrowInvalid``, whose message names the library's code."""
    def stats(self, *, top: int = 10) -> Dict[str, Any]:
        """The figures of ``mtf stats -f json`` (docs/stats.md): records and integer fields per
        type, per namespace the peak of live bytes and when, totals, leaks, lifetimes, sizes,
        and the ``top`` sites of each ranking."""
    def sql(self, query: str, *, engine: Optional[str] = None) -> pyarrow.Table:
        """The result of an SQL query over the trace's tables (a table per record type,
        ``records``, ``events``, ``blocks``). ``engine``: ``"datafusion"`` (the library's own,
        reading the trace in place; a build with the cargo feature ``sql``, :data:`HAS_SQL`),
        ``"duckdb"`` (DuckDB over the tables the query names, made whole first; ``pip install
        duckdb``); by default the library's own where the build has it, else DuckDB. Raises
        :class:`metatf.SqlError` when the query fails or neither engine is there."""
