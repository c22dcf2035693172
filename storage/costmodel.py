"""The tensor-program cost model in the store: cross-validated evaluations (their per-configuration
predictions, so the page can redraw any scatter or rank plot) and models trained on a whole data set (whose
weights are a checkpoint beside the database, as DiffTune's surrogates are)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from storage.store import Store, StoreError, _json, json_frame, json_row

PREDICTION_COLUMNS = ("model", "seed", "fold", "graph", "program", "config", "runtime", "prediction")
_MODEL = ("id", "name", "data", "task", "params", "folder", "seconds", "summary", "created_at")


def save_evaluation(store: Store, *, name: str, data: str, task: str, summary: Mapping[str, Any],
                    predictions: pd.DataFrame) -> int:
    """Store one evaluation and its predictions (columns :data:`PREDICTION_COLUMNS`) in one transaction."""
    missing = [c for c in PREDICTION_COLUMNS if c not in predictions.columns]
    if missing:
        raise StoreError(f"predictions: no column {missing[0]!r}")
    with store.transaction() as con:
        evaluation_id = int(con.execute(
            "INSERT INTO costmodel_evaluations (name, data, task, summary) VALUES (?, ?, ?, ?) RETURNING id",
            [name, data, task, _json(dict(summary))]).fetchall()[0][0])
        frame = predictions[list(PREDICTION_COLUMNS)].assign(evaluation_id=evaluation_id)
        con.register("_costmodel_rows", frame)
        try:
            con.execute(f"INSERT INTO costmodel_predictions (evaluation_id, {', '.join(PREDICTION_COLUMNS)})"
                        f" SELECT evaluation_id, {', '.join(PREDICTION_COLUMNS)} FROM _costmodel_rows")
        finally:
            con.unregister("_costmodel_rows")
    return evaluation_id


def evaluations(store: Store) -> pd.DataFrame:
    """Stored evaluations, newest first, ``summary`` parsed."""
    return json_frame(store, "SELECT id, name, data, task, summary, created_at FROM costmodel_evaluations ORDER BY id DESC",
                      ["summary"])


def evaluation_predictions(store: Store, evaluation_id: int) -> pd.DataFrame:
    return store._df(f"SELECT {', '.join(PREDICTION_COLUMNS)} FROM costmodel_predictions WHERE evaluation_id = ?"
                     " ORDER BY model, seed, fold, graph, config", [int(evaluation_id)])


def save_model(store: Store, *, name: str, data: str, task: str, params: Mapping[str, Any], folder: str,
               seconds: float, summary: Mapping[str, Any]) -> int:
    """Record a trained model whose checkpoint is in ``folder``."""
    if store._one("SELECT 1 FROM costmodels WHERE name = ?", [name]) is not None:
        raise StoreError(f"cost model '{name}': exists already")
    return int(store._scalar(
        "INSERT INTO costmodels (name, data, task, params, folder, seconds, summary) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " RETURNING id", [name, data, task, _json(dict(params)), folder, float(seconds), _json(dict(summary))]))


def model(store: Store, name: str) -> dict[str, Any] | None:
    """One trained model's row (``params`` and ``summary`` parsed), or None."""
    return json_row(store, f"SELECT {', '.join(_MODEL)} FROM costmodels WHERE name = ?", [name], _MODEL,
                    ["params", "summary"])


def models(store: Store) -> pd.DataFrame:
    return json_frame(store, f"SELECT {', '.join(_MODEL)} FROM costmodels ORDER BY id", ["params", "summary"])
