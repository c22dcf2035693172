"""Printing for CLI commands: one JSON document with ``--json``, readable text otherwise."""

from __future__ import annotations

import json
from typing import Any


def emit(data: Any, as_json: bool, text: str | None = None) -> None:
    """Print ``data`` as one JSON document, or ``text`` (default: a key: value listing)."""
    from engine.io.jsonable import jsonable  # numpy and pandas: only once a command prints

    if as_json:
        print(json.dumps(jsonable(data), indent=2))
        return
    if text is None:
        if isinstance(data, dict):
            text = "\n".join(f"{k}: {v}" for k, v in jsonable(data).items())
        else:
            text = str(data)
    print(text)
