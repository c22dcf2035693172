"""Study exports: one JSON document (spec + measurements) that reads back, a CSV, and safe file writing.

The JSON document is what moves a study between Tunelab installations::

    {"format": "tunelab-study", "version": 1,
     "spec": {...StudySpec.to_dict()...},
     "extra": {...} or null,
     "columns": ["x1", ..., "value", "status", "error", ...],
     "dtypes": {"x1": "int64", ...},
     "measurements": [
       {"x1": 2, ..., "value": 1.5, "status": "ok", "error": null},
       ...]}

Keys keep a fixed order (spec order, then the frame's column order), rows keep the frame's order,
one measurement per line; NaN and infinities become ``null`` and timestamps ISO-8601 text, so any
JSON reader accepts it. ``dtypes`` lets :func:`parse_study_json` restore column types.

The CSV is for spreadsheets: factor columns, the objective (the ``value`` column under the
objective's name), ``status``, ``error``, then any other columns; :func:`engine.io.table_import.import_table`
reads it back (single-level factors excepted: a constant column is not a factor there). Every CSV a person
downloads is written by :func:`csv_text` (or holds :func:`spreadsheet_value` cells): text a spreadsheet would run
as a formula gets a ``'`` in front (:func:`engine.io.spreadsheet.spreadsheet_quoted` says which), and the
importer takes it off again, so text round-trips exactly.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.io.spreadsheet import csv_quoting, spreadsheet_value
from engine.io.table_import import load_json
from engine.study import StudySpec

FORMAT = "tunelab-study"
VERSION = 1


@dataclass
class StudyDocument:
    """A parsed study export."""

    spec: StudySpec
    measurements: pd.DataFrame
    extra: dict[str, Any] | None


def _clean(value: Any) -> Any:
    """A JSON-ready copy: numpy/pandas scalars to Python, NaN/inf to None, timestamps to ISO text."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return _clean(value.item())
    if isinstance(value, (pd.Timestamp, dt.datetime, dt.date)):
        return None if pd.isna(value) else value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is pd.NA or value is pd.NaT:
        return None
    raise TypeError(f"cannot export a {type(value).__name__} value ({value!r:.40})")


def _column_values(column: pd.Series) -> list[Any]:
    """One column as JSON-ready Python values, converted a whole column at a time where possible."""
    if pd.api.types.is_float_dtype(column):
        values = column.to_numpy(dtype=float)
        return [v if ok else None for v, ok in zip(values.tolist(), np.isfinite(values).tolist())]
    if pd.api.types.is_bool_dtype(column) or (pd.api.types.is_integer_dtype(column) and not column.hasnans):
        return list(column.tolist())
    return [_clean(v) for v in column.astype(object).where(column.notna(), None).tolist()]


def _json(value: Any) -> str:
    return json.dumps(_clean(value), ensure_ascii=False, allow_nan=False)


def study_to_json(spec: StudySpec, measurements: pd.DataFrame, extra: dict[str, Any] | None = None) -> str:
    """The study as one JSON document (see the module docstring for its layout)."""
    columns = [str(c) for c in measurements.columns]
    values = [_column_values(measurements[c]) for c in measurements.columns]
    rows = [_json(dict(zip(columns, row))) for row in zip(*values)] if columns else []
    head = [
        f'"format": {_json(FORMAT)}',
        f'"version": {VERSION}',
        f'"spec": {_json(spec.to_dict())}',
        f'"extra": {_json(extra)}',
        f'"columns": {_json(columns)}',
        f'"dtypes": {_json({c: str(measurements[c].dtype) for c in measurements.columns})}',
    ]
    body = ",\n".join(rows)
    return "{\n" + ",\n".join(head) + ',\n"measurements": [\n' + body + ("\n" if rows else "") + "]\n}\n"


def parse_study_json(text: str | bytes) -> StudyDocument:
    """Read a document written by :func:`study_to_json` back into a spec and a measurements frame."""
    try:
        doc = load_json(text.decode("utf-8") if isinstance(text, bytes) else text, "study JSON")
    except json.JSONDecodeError as exc:
        raise UserError(f"study JSON: not valid JSON at line {exc.lineno} col {exc.colno} ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"study JSON: not UTF-8 text (byte {exc.start})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UserError(f"study JSON: 'format' must be {FORMAT!r}; is this a Tunelab study export?")
    if doc.get("version") != VERSION:
        raise UserError(f"study JSON: version {doc.get('version')!r} is not supported (expected {VERSION})")
    records, columns = doc.get("measurements"), doc.get("columns")
    if not isinstance(records, list) or not isinstance(columns, list) or not all(isinstance(r, dict) for r in records):
        raise UserError("study JSON: 'measurements' must be a list of objects and 'columns' a list of names")
    spec = StudySpec.from_dict(doc.get("spec"))  # type: ignore[arg-type]  # from_dict refuses a non-mapping by name
    frame = pd.DataFrame.from_records(records, columns=columns) if records else pd.DataFrame(columns=columns)
    for name, dtype in (doc.get("dtypes") or {}).items():
        if name in frame and str(frame[name].dtype) != dtype:
            try:
                frame[name] = frame[name].astype(dtype)
            except (TypeError, ValueError):
                pass  # keep what JSON gave: a dtype this pandas cannot build is not worth failing over
    if "error" in frame:
        frame["error"] = frame["error"].astype(object).where(frame["error"].notna(), None)
    return StudyDocument(spec=spec, measurements=frame, extra=doc.get("extra"))


def study_to_csv(spec: StudySpec, measurements: pd.DataFrame) -> str:
    """Factor columns, the objective (from ``value``), status, error, then the remaining columns."""
    missing = [name for name in spec.space.names if name not in measurements.columns]
    if missing:
        raise UserError(f"export: measurements lack factor column '{missing[0]}'")
    frame = measurements
    if "value" in frame.columns:
        if spec.objective in frame.columns and spec.objective != "value":
            raise UserError(f"export: measurements have both 'value' and '{spec.objective}' columns")
        frame = frame.rename(columns={"value": spec.objective})
    first = [*spec.space.names, *(c for c in (spec.objective, "status", "error") if c in frame.columns)]
    return csv_text(frame[first + [c for c in frame.columns if c not in first]])


def _spreadsheet_column(column: pd.Series) -> pd.Series:
    """Only text can read as a formula, and of numbers only ``-inf``: other columns pass through untouched."""
    kind = column.dtype.kind
    if kind in "biuM" or (kind == "f" and not np.isneginf(column.to_numpy(dtype=float, na_value=np.nan)).any()):
        return column
    return column.astype(object).map(spreadsheet_value)


def csv_text(frame: pd.DataFrame, float_format: str | None = None) -> str:
    """``frame`` as CSV text (no index, ``\\n`` line ends) that is safe to open in a spreadsheet: column names and
    cells pass through :func:`spreadsheet_value`."""
    safe = pd.DataFrame({i: _spreadsheet_column(frame.iloc[:, i]) for i in range(frame.shape[1])}, index=frame.index)
    safe.columns = pd.Index([spreadsheet_value(str(name)) for name in frame.columns], dtype=object)
    cells = chain(safe.columns, *(safe.iloc[:, i] for i in range(safe.shape[1]) if safe.dtypes.iloc[i].kind in "OSU"))
    return str(safe.to_csv(index=False, lineterminator="\n", quoting=csv_quoting(cells), float_format=float_format))
