"""DiffTune's trained surrogates and parameter-learning experiments in the store.

A surrogate's weights are checkpoints in its folder (torch files are cheaper there than in DuckDB); the
store keeps what it was trained on, how far it got and its scores. An experiment's per-block predictions
are an ordinary simulator evaluation (:mod:`storage.difftune`); its row adds the kind, the surrogate and a
JSON summary (baselines, costs, learning curves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from storage.store import Store, StoreError, _json, json_frame, json_row

_SURROGATE = ("id", "name", "dataset", "config", "folder", "epochs_done", "val_mape", "test_mape", "seconds",
              "created_at", "updated_at")


def create_surrogate(store: Store, *, name: str, dataset: str, config: Mapping[str, Any], folder: str) -> int:
    """Record a surrogate about to be trained; returns its id."""
    if store._one("SELECT 1 FROM surrogates WHERE name = ?", [name]) is not None:
        raise StoreError(f"surrogate '{name}': exists already")
    return int(store._scalar("INSERT INTO surrogates (name, dataset, config, folder) VALUES (?, ?, ?, ?) RETURNING id",
                             [name, dataset, _json(dict(config)), folder]))


def surrogate(store: Store, name: str) -> dict[str, Any] | None:
    """One surrogate's row (``config`` parsed), or None."""
    return json_row(store, f"SELECT {', '.join(_SURROGATE)} FROM surrogates WHERE name = ?", [name], _SURROGATE, ["config"])


def surrogates(store: Store) -> pd.DataFrame:
    return json_frame(store, f"SELECT {', '.join(_SURROGATE)} FROM surrogates ORDER BY id", ["config"])


def update_surrogate(store: Store, name: str, *, epochs_done: int, val_mape: float | None, seconds: float,
                     test_mape: float | None = None) -> None:
    """Record training progress (after each epoch) and, once measured, the test MAPE."""
    store._exec("UPDATE surrogates SET epochs_done = ?, val_mape = ?, seconds = seconds + ?,"
                " test_mape = coalesce(?, test_mape), updated_at = current_timestamp WHERE name = ?",
                [int(epochs_done), val_mape, float(seconds), test_mape, name])


def save_experiment(store: Store, *, kind: str, surrogate_name: str, evaluation_id: int, summary: Any) -> int:
    return int(store._scalar("INSERT INTO difftune_experiments (kind, surrogate, evaluation_id, summary)"
                             " VALUES (?, ?, ?, ?) RETURNING id", [kind, surrogate_name, int(evaluation_id), _json(summary)]))


def experiments(store: Store) -> pd.DataFrame:
    """Stored experiments, newest first, ``summary`` parsed."""
    return json_frame(store, "SELECT id, kind, surrogate, evaluation_id, summary, created_at FROM difftune_experiments"
                      " ORDER BY id DESC", ["summary"])
