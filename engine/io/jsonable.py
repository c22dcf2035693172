"""Plain JSON values from engine results (numpy scalars, NaN, tables and timestamps included).

Decisions are logged, CLI results printed and stores written as JSON; all need the same conversion,
and NaN must become ``null`` (JSON has no NaN) rather than an invalid token. :func:`plain` is the one
numpy-scalar conversion the engine uses wherever a value leaves numpy (configuration keys, dicts,
messages); :func:`jsonable` builds on it. Neither imports numpy or pandas: printing a command's result, or
storing a spec, must not pay for them.
"""

from __future__ import annotations

import math
import sys
from datetime import date, datetime
from typing import Any


def numpy_types(*names: str) -> tuple[Any, ...]:
    """numpy's types ``names`` (``"integer"``, ``"bool_"``) for an ``isinstance`` check, or none before numpy is
    imported: no value can be of one then, and finding that out must not import numpy (0.1-0.3 s of CPU)."""
    np = sys.modules.get("numpy")
    return tuple(getattr(np, name) for name in names) if np is not None else ()


def plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds (``np.int64(4)`` -> ``4``); anything else unchanged."""
    np = sys.modules.get("numpy")  # as numpy_types, at a dict look-up's cost: this runs once per value of a table
    return value.item() if np is not None and isinstance(value, np.generic) else value


def jsonable(value: Any) -> Any:
    """Recursively convert to dict/list/str/int/float/bool/None; non-finite floats become None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, numpy_types("ndarray")):
        return [jsonable(v) for v in value.tolist()]
    pd = sys.modules.get("pandas")  # a pandas value exists only once pandas is imported: never import it here
    if pd is not None:
        if isinstance(value, pd.DataFrame):
            return [jsonable(r) for r in value.to_dict(orient="records")]
        if isinstance(value, pd.Series):
            return [jsonable(v) for v in value.tolist()]
        if value is pd.NaT or value is pd.NA:  # NaT is a datetime: before the next test
            return None
    if isinstance(value, (datetime, date)):  # pandas' Timestamp included
        return value.isoformat()
    value = plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
