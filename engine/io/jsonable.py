"""Plain JSON values from engine results (numpy scalars, NaN, tables and timestamps included).

Decisions are logged, CLI results printed and stores written as JSON; all need the same conversion,
and NaN must become ``null`` (JSON has no NaN) rather than an invalid token. :func:`plain` is the one
numpy-scalar conversion the engine uses wherever a value leaves numpy (configuration keys, dicts,
messages); :func:`jsonable` builds on it.
"""

from __future__ import annotations

import math
import sys
from datetime import date, datetime
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds (``np.int64(4)`` -> ``4``); anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def jsonable(value: Any) -> Any:
    """Recursively convert to dict/list/str/int/float/bool/None; non-finite floats become None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
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
