"""Printing for CLI commands: one JSON document with ``--json``, readable text otherwise."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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


def table_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as a text table under a header, each column right-aligned to its widest cell (as pandas prints
    a frame, without importing it)."""
    cells = [list(columns), *[[str(row[c]) for c in columns] for row in rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(" ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in cells)
