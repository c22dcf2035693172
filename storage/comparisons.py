"""Strategy comparisons (offline benchmarks) in the store: parameters, summary and one row per run.

Plain functions over a :class:`~storage.store.Store` so the store class stays about studies; they
use its locked query helpers. A comparison is written in one transaction: either all its runs are
stored or none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from storage.store import Store, StoreError, _first, _json

RUN_COLUMNS = ["strategy", "rep", "seed", "value", "slowdown", "best_slowdown", "budget_used", "config", "trace"]


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _trace(values: Iterable[float]) -> str:
    """Best-so-far slowdowns as compact JSON (6 significant digits; null before the first success)."""
    return json.dumps([None if not math.isfinite(v) else float(f"{v:.6g}") for v in np.asarray(values, dtype=float)],
                      separators=(",", ":"))


def save_comparison(store: Store, *, name: str, study: str | None, params: Mapping[str, Any], summary: Any,
                    runs: pd.DataFrame) -> int:
    """Store a comparison and its runs; returns its id."""
    missing = [c for c in RUN_COLUMNS if c not in runs.columns]
    if missing:
        raise StoreError(f"comparison runs: missing column '{missing[0]}'")
    rows = pd.DataFrame({
        "strategy": runs["strategy"].astype(str),
        "rep": runs["rep"].astype(int),
        "seed": runs["seed"].astype(np.int64),
        "value": [_finite(v) for v in runs["value"]],
        "slowdown": [_finite(v) for v in runs["slowdown"]],
        "best_slowdown": [_finite(v) for v in runs["best_slowdown"]],
        "budget_used": runs["budget_used"].astype(int),
        "config": [None if c is None else _json(c) for c in runs["config"]],
        "trace": [_trace(t) for t in runs["trace"]],
    })
    with store.transaction() as con:
        comparison_id = _first(con.execute(
            "INSERT INTO comparisons (name, study, params, summary) VALUES (?, ?, ?, ?) RETURNING id",
            [name, study, _json(dict(params)), _json(summary)],
        ).fetchone())
        rows.insert(0, "comparison_id", comparison_id)
        store.insert_frame("comparison_runs", rows)
    return int(comparison_id)


def list_comparisons(store: Store, study: str | None = None) -> pd.DataFrame:
    """Stored comparisons, newest first: id, name, study, created_at, runs, params, summary (parsed)."""
    where, params = ("WHERE c.study = ?", [study]) if study is not None else ("", [])
    frame = store._df(
        f"""
        SELECT c.id, c.name, c.study, c.created_at, count(r.rep) AS runs, c.params, c.summary
        FROM comparisons c LEFT JOIN comparison_runs r ON r.comparison_id = c.id
        {where} GROUP BY ALL ORDER BY c.id DESC
        """,
        params,
    )
    frame["params"] = [json.loads(p) for p in frame["params"]]
    frame["summary"] = [json.loads(s) for s in frame["summary"]]
    return frame


def load_comparison(store: Store, comparison_id: int) -> dict[str, Any]:
    """One comparison: ``id``, ``name``, ``study``, ``params``, ``summary``, ``created_at`` and ``runs``
    (a DataFrame with the run columns; ``config`` and ``trace`` parsed back)."""
    row = store._one("SELECT id, name, study, params, summary, created_at FROM comparisons WHERE id = ?", [int(comparison_id)])
    if row is None:
        raise StoreError(f"comparison {comparison_id} not found")
    runs = store._df(
        f"SELECT {', '.join(RUN_COLUMNS)} FROM comparison_runs WHERE comparison_id = ? ORDER BY rowid", [int(comparison_id)]
    )
    runs["config"] = [json.loads(c) if isinstance(c, str) else None for c in runs["config"]]  # DuckDB: NULL is NaN here
    runs["trace"] = [[math.inf if v is None else v for v in json.loads(t)] if t else [] for t in runs["trace"]]
    for column in ("value", "slowdown", "best_slowdown"):
        runs[column] = runs[column].astype(float).fillna(math.inf if column != "value" else math.nan)
    return {"id": row[0], "name": row[1], "study": row[2], "params": json.loads(row[3]),
            "summary": json.loads(row[4]), "created_at": row[5], "runs": runs}


def delete_comparison(store: Store, comparison_id: int) -> None:
    with store.transaction() as con:
        if con.execute("SELECT 1 FROM comparisons WHERE id = ?", [int(comparison_id)]).fetchone() is None:
            raise StoreError(f"comparison {comparison_id} not found")
        con.execute("DELETE FROM comparison_runs WHERE comparison_id = ?", [int(comparison_id)])
        con.execute("DELETE FROM comparisons WHERE id = ?", [int(comparison_id)])
