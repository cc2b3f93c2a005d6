"""The exceptions of metatf: every error of the library is a :class:`Error`."""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """An error of metatf.

    Attributes:
        code: the library's diagnostic code (``mtf::container::truncated``, ``mtf::io::open``,
            ...), as ``mtf`` prints it; None where there is none.
        path: the trace (or DTD) concerned, where known.
        offset: the byte offset in the trace where the problem is, where known.
    """

    code: Optional[str]
    path: Optional[str]
    offset: Optional[int]

    def __init__(self, message: str, code: Optional[str] = None,
                 path: Optional[str] = None, offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code
        self.path = path
        self.offset = offset


class OpenError(Error):
    """The trace could not be read (unreadable, a folder, a corrupt compressed stream)."""


class TraceNotFoundError(OpenError, FileNotFoundError):
    """The trace does not exist (also a :class:`FileNotFoundError`)."""


class DtdError(Error):
    """The trace's DTD was not found or is not usable."""


class DecodeError(Error):
    """The trace's container or a record is damaged (``metatf.open(path, salvage=True)`` reads
    the regions that can be trusted)."""


class TableError(Error, KeyError):
    """No table of that name in the trace."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SqlError(Error):
    """The SQL query could not be run (or this build has no SQL engine)."""
