"""Import a Kernel Tuner cache file (``.json`` or ``.json.gz``) as a table study (dlmt.md §7).

Decisions, so the dashboard and the store can rely on them:

* **Repair.** An interrupted run leaves the file unterminated. Text that is not complete JSON
  is repaired like KT's own reader does: when it does not end with ``}\\n}`` or ``}}}``, one
  trailing comma is stripped and ``}\\n}`` appended.
  A comma after the last record (``...},\\n}\\n}``) is also tolerated. ``report["repaired"]`` says
  whether either was needed. Anything else that is not JSON is a one-line error with line/column.
* **Failures.** Every encoding KT ever wrote is recognised, first match wins: an ``__error__``
  or ``error`` field (non-null), the objective holding a failure name, any other field holding
  one, a non-finite objective, the ≥ 1e20 sentinel. ``InvalidConfig`` → status ``invalid``;
  ``CompilationFailedConfig``, ``RuntimeFailedConfig``, ``ErrorConfig`` → ``failed``; the
  ``error`` column keeps the KT name. The sentinel and non-numeric objectives carry no kind:
  they are ``failed`` / ``ErrorConfig``. An ``__error__`` text that is no KT name is kept as is.
* **Factors.** ``tune_params_keys`` in order, levels from ``tune_params``: all booleans →
  boolean, all numbers → ordinal (ints stay ints), otherwise categorical. Single-level
  parameters (``use_cmem=[1]``) stay factors so the spec matches KT's key and the file
  round-trips; they are listed in ``report["single_level_factors"]`` for model code to skip.
* **Objective.** The ``objective`` key (default ``"time"``, milliseconds), minimised unless the
  caller says otherwise; a name that is not an identifier (``GFLOP/s``) becomes one (``GFLOP_s``).
* **Coverage.** Configurations absent from the cache are restricted or unmeasured, not invalid:
  ``report`` gives ``factorial_size``, ``present`` (distinct measured configurations),
  ``absent`` and ``exhaustive`` (present == factorial_size).
* **Extras.** Scalar numeric fields besides parameters and objective (``compile_time``,
  ``benchmark_time``, ``GFLOP/s`` ...) go to ``ImportedTable.extras``, row-aligned with the
  table, named as in the file; a time budget needs them, the table itself stays value/status/error.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.io.jsonable import plain
from engine.io.table_import import (
    ImportedTable,
    Source,
    load_json,
    read_bytes,
    source_name,
    study_name_from,
    summarise,
)
from engine.space.factors import Factor, Space
from engine.study import StudySpec, check_reserved

#: Failure names KT writes, and the table status each becomes.
FAILURE_STATUS = {
    "InvalidConfig": "invalid",
    "CompilationFailedConfig": "failed",
    "RuntimeFailedConfig": "failed",
    "ErrorConfig": "failed",
}
SENTINEL = 1e20
_ERROR_KEYS = ("__error__", "error")
_NOT_EXTRA = {"times", "timestamp", *_ERROR_KEYS}


def repair_cache_text(text: str) -> tuple[str, bool]:
    """KT's repair for an unterminated cache, plus dropping a comma after the last record."""
    body = text.rstrip()
    repaired = False
    if body and body[-3:] not in ("}\n}", "}}}"):
        body = (body[:-1] if body.endswith(",") else body) + "}\n}"
        repaired = True
    tail = body[-200:]
    fixed = re.sub(r",\s*(\}\s*\}\s*)\Z", r"\1", tail)
    if fixed != tail:
        body = body[: len(body) - len(tail)] + fixed
        repaired = True
    return body, repaired


def _parse_json(text: str, label: str) -> tuple[Any, bool]:
    """Parse as is when the text is complete JSON, else after KT's repair (which would break a
    complete but compact ``...}}`` ending, so it is only the fallback)."""
    what = f"kt-cache {label}"
    try:
        return load_json(text, what), False
    except json.JSONDecodeError:
        pass
    body, repaired = repair_cache_text(text)
    try:
        return load_json(body, what), repaired
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) - 1:
            raise UserError(
                f"kt-cache {label}: truncated beyond repair (the text ends inside a record, line {exc.lineno})"
            ) from None
        raise UserError(f"kt-cache {label}: not valid JSON at line {exc.lineno} col {exc.colno} ({exc.msg})") from None


def _load(source: Source, label: str) -> tuple[dict[str, Any], bool]:
    data = read_bytes(source, f"kt-cache {label}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"kt-cache {label}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise UserError(f"kt-cache {label}: the file is empty")
    doc, repaired = _parse_json(text, label)
    if not isinstance(doc, dict):
        raise UserError(f"kt-cache {label}: expected a JSON object at the top level")
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in doc:
            raise UserError(f"kt-cache {label}: missing '{key}'; is this a Kernel Tuner cache file?")
    if not isinstance(doc["cache"], dict):
        raise UserError(f"kt-cache {label}: 'cache' must be an object of records")
    return doc, repaired


def _factor(name: str, levels: Any, label: str) -> Factor:
    if not isinstance(levels, list):
        raise UserError(f"kt-cache {label}: tune_params {brief(name)} must be a list of levels, got {brief(levels)}")
    if levels and all(isinstance(v, bool) for v in levels):
        kind = "boolean"
    elif levels and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels):
        kind = "ordinal"
    else:
        kind = "categorical"
        levels = [str(v) for v in levels]
    return Factor(name, kind, tuple(levels))


def _factors(doc: dict[str, Any], label: str) -> list[Factor]:
    keys, params = doc["tune_params_keys"], doc["tune_params"]
    if not (isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys) and isinstance(params, dict)):
        raise UserError(f"kt-cache {label}: 'tune_params_keys' must be a non-empty list and 'tune_params' an object")
    missing = [k for k in keys if k not in params]
    if missing:
        raise UserError(f"kt-cache {label}: tune_params has no levels for {brief(missing[0])}")
    check_reserved(keys, f"kt-cache {label}")
    try:
        return [_factor(name, params[name], label) for name in keys]
    except UserError as exc:
        raise UserError(f"kt-cache {label}: {exc}") from None


def _factor_column(factor: Factor, records: pd.DataFrame, label: str) -> pd.Series:
    """A record field converted to the factor's type; a value that is not a level is an error."""
    if factor.name not in records:
        raise UserError(f"kt-cache {label}: records lack parameter '{factor.name}'")
    raw = records[factor.name]
    if factor.kind == "categorical":
        column = raw.astype(str)
    elif factor.kind == "boolean":
        column = raw
    else:
        column = pd.to_numeric(raw, errors="coerce")
    on_grid = column.isin(list(factor.levels))
    if not on_grid.all():
        row = int(np.argmax(~on_grid.to_numpy()))
        raise UserError(
            f"kt-cache {label}: record {brief(records.index[row])}: "
            f"{factor.name}={brief(plain(raw.iloc[row]))} is not in tune_params"
        )
    return column.astype(bool) if factor.kind == "boolean" else column


def _failures(records: pd.DataFrame, objective: str) -> pd.Series:
    """Per record, the failure name (or KT's text for it); None where the record is a measurement.

    The encodings are tried in priority order and the first that matches a record names its failure.
    """
    n = len(records)
    masks: list[np.ndarray] = []
    names: list[np.ndarray] = []
    for key in _ERROR_KEYS:
        if key in records:
            col = records[key]
            masks.append((col.notna() & (col != False) & (col != "")).to_numpy(dtype=bool))  # noqa: E712
            names.append(col.astype(str).to_numpy(dtype=object))
    ordered = [objective, *(c for c in records.columns if c != objective)]
    for key in ordered:
        if key in records and not pd.api.types.is_numeric_dtype(records[key]):
            masks.append(records[key].isin(list(FAILURE_STATUS)).to_numpy(dtype=bool))
            names.append(records[key].to_numpy(dtype=object))
    values = _numbers(records[objective]) if objective in records else np.full(n, np.nan)
    masks.append(~np.isfinite(values) | (values >= SENTINEL))
    names.append(np.full(n, "ErrorConfig", dtype=object))
    return pd.Series(np.select(masks, names, default=None), dtype=object)  # type: ignore[call-overload]  # None: no failure


def _numbers(column: pd.Series) -> np.ndarray:
    """Floats of a record field; NaN where it holds no real number (strings, None, booleans, lists)."""
    numeric = column.map(type).isin([int, float])
    numbers: np.ndarray = pd.to_numeric(column.where(numeric), errors="coerce").to_numpy(dtype=float)
    return numbers


def _extras(records: pd.DataFrame, skip: set[str]) -> pd.DataFrame:
    """Scalar numeric record fields other than parameters and objective, NaN where absent."""
    extras = {}
    for key in records.columns:
        if key in skip or key in _NOT_EXTRA:
            continue
        numbers = _numbers(records[key])
        if not np.isnan(numbers).all():
            extras[key] = numbers
    return pd.DataFrame(extras)


def _objective_name(field: str, factor_names: list[str]) -> str:
    name = re.sub(r"\W", "_", field)
    if not name or name[0].isdigit():
        name = f"_{name}"
    return name if name not in factor_names else f"{name}_objective"


def import_kt_cache(path_or_bytes: Source, name: str | None = None, direction: str = "minimize") -> ImportedTable:
    """Read a Kernel Tuner cache (path, bytes or binary file; gzip detected by content)."""
    label = source_name(path_or_bytes) or "upload"
    doc, repaired = _load(path_or_bytes, label)
    factors = _factors(doc, label)
    names = [f.name for f in factors]
    field = doc.get("objective") or "time"
    if not isinstance(field, str):
        raise UserError(f"kt-cache {label}: objective {brief(field)} must be a field name")
    if not doc["cache"]:
        raise UserError(f"kt-cache {label}: the cache holds no records")
    bad = next((k for k, v in doc["cache"].items() if not isinstance(v, dict)), None)
    if bad is not None:
        raise UserError(f"kt-cache {label}: record {brief(bad)} is not an object")
    records = pd.DataFrame.from_dict(doc["cache"], orient="index")

    table = pd.DataFrame({f.name: _factor_column(f, records, label) for f in factors}).reset_index(drop=True)
    failure = _failures(records, field)
    status = failure.map(FAILURE_STATUS).fillna("failed").where(failure.notna(), "ok").astype(str)
    values = _numbers(records[field]) if field in records else np.full(len(records), np.nan)
    table["value"] = pd.Series(values).where(status == "ok")
    table["status"] = status
    table["error"] = failure

    space = Space(factors)
    kernel = str(doc.get("kernel_name") or "")
    if name is None:
        stem = source_name(path_or_bytes).removesuffix(".gz").removesuffix(".json")
        name = study_name_from(stem or kernel, "kt-cache")
    spec = StudySpec(
        name=name,
        space=space,
        objective=_objective_name(field, names),
        direction=direction,
        runner={"kind": "table", "source": label, "format": "kernel_tuner"},
        description=f"Kernel Tuner cache of {kernel or 'a kernel'} on {doc.get('device_name') or 'an unknown device'}",
    )
    report = summarise(table, names, direction)
    kinds = failure.value_counts()
    report.update(
        constant_columns_dropped=[],
        single_level_factors=[f.name for f in factors if f.n_levels == 1],
        failure_kinds={str(k): int(v) for k, v in kinds.items()},
        factorial_size=space.size,
        present=report["distinct_configs"],
        absent=space.size - report["distinct_configs"],
        exhaustive=report["distinct_configs"] == space.size,
        objective_field=field,
        kernel_name=doc.get("kernel_name"),
        device_name=doc.get("device_name"),
        problem_size=doc.get("problem_size"),
        repaired=repaired,
    )
    extras = _extras(records, {*names, field})
    report["extra_columns"] = list(extras.columns)
    return ImportedTable(spec=spec, table=table, report=report, extras=extras)
