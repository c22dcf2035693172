"""Every exception a command raises, as one line on stderr and an exit status (never a traceback).

* bad input (``ValueError``, :class:`~engine.errors.UserError`) and files (``OSError``): exit 2 with
  the message;
* a DuckDB error while the command runs (a corrupt or truncated file found at query time): exit 2,
  naming the database file;
* inputs too big or too deep for Python (``MemoryError``, ``RecursionError``, ``OverflowError``):
  exit 2 with what happened;
* anything else is a bug: exit 1, ``tunelab: error: <Type>: <first line>`` and a request to report
  it. ``TUNELAB_DEBUG=1`` prints the traceback as well.
"""

from __future__ import annotations

import os
import sys
import traceback

#: Exit status of a refused input or an unusable file.
USER_ERROR = 2
#: Exit status of a bug.
INTERNAL_ERROR = 1


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_duckdb(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb")


def describe(exc: Exception, db: str | None) -> tuple[int, str]:
    """(exit status, one line) for ``exc`` raised by a command run with ``--db db``."""
    if _is_duckdb(exc):
        return USER_ERROR, f"database {db}: {first_line(exc)} (is the file damaged? restore it from a backup)"
    if isinstance(exc, MemoryError):
        return USER_ERROR, "out of memory: the input or a requested size is too large for this machine"
    if isinstance(exc, RecursionError):
        return USER_ERROR, "input nested too deeply (Python's recursion limit)"
    if isinstance(exc, OverflowError):
        return USER_ERROR, f"number too large: {first_line(exc)}"
    if isinstance(exc, (ValueError, OSError)):
        return USER_ERROR, first_line(exc)
    return INTERNAL_ERROR, (f"{type(exc).__name__}: {first_line(exc)} (this is a bug in tunelab: please report it; "
                            "TUNELAB_DEBUG=1 shows the traceback)")


def report(exc: Exception, db: str | None) -> int:
    """Print ``exc`` as one line (plus the traceback with TUNELAB_DEBUG=1); return the exit status."""
    status, line = describe(exc, db)
    if os.environ.get("TUNELAB_DEBUG") == "1":
        traceback.print_exception(exc, file=sys.stderr)
    print(f"tunelab: error: {line}", file=sys.stderr)
    return status
