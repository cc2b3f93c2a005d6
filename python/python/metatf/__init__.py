"""metatf: binary traces described by a Meta-TF DTD, from Python.

>>> import metatf
>>> t = metatf.open("traces/android.mtf")
>>> t.blocks().num_rows > 0
True

``metatf.open(path)`` gives a :class:`Trace`; its tables are ``pyarrow.Table`` objects whose
buffers the library filled (zero copy through the Arrow C data interface), and ``stats()`` is the
dict of ``mtf stats -f json``. Every error is a :class:`metatf.Error` with the library's
diagnostic ``code``. docs/python.md in the repository has the details.
"""

from ._errors import (
    DecodeError,
    DtdError,
    Error,
    OpenError,
    SqlError,
    TableError,
    TraceNotFoundError,
)
from ._metatf import HAS_SQL, Trace, __version__, open

__all__ = [
    "open",
    "Trace",
    "Error",
    "OpenError",
    "TraceNotFoundError",
    "DtdError",
    "DecodeError",
    "TableError",
    "SqlError",
    "HAS_SQL",
    "__version__",
]
