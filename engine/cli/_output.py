"""Printing for CLI commands: one JSON document with ``--json``, readable text otherwise."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd


def _plain(value: Any) -> Any:
    """Make numpy/pandas values JSON-friendly; non-finite floats become null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return [_plain(r) for r in value.to_dict(orient="records")]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit(data: Any, as_json: bool, text: str | None = None) -> None:
    """Print ``data`` as one JSON document, or ``text`` (default: a key: value listing)."""
    if as_json:
        print(json.dumps(_plain(data), indent=2))
        return
    if text is None:
        if isinstance(data, dict):
            text = "\n".join(f"{k}: {v}" for k, v in _plain(data).items())
        else:
            text = str(data)
    print(text)
