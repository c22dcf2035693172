"""DiffTune's simulated data sets in the store: what each one is (arch, blocks, resource model, folder) and how
far it has got.

The samples themselves are Parquet shards in the data set's folder (millions of rows are cheaper there than
in DuckDB); the store keeps the reference and ``samples_done``, the count of samples whose shards are
complete, so a rerun resumes after them. Plain functions over a :class:`~storage.store.Store`, as
:mod:`storage.difftune`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from storage.store import Store, StoreError, _json, json_row

_COLUMNS = ("id", "name", "arch", "blocks", "model", "folder", "samples_done", "samples_wanted", "created_at", "updated_at")


def create_dataset(store: Store, *, name: str, arch: str, blocks: Sequence[str], model: Mapping[str, Any],
                   folder: str, samples_wanted: int) -> int:
    """Record a new data set (nothing simulated yet) under a unique name; returns its id."""
    if store._one("SELECT 1 FROM simulated_datasets WHERE name = ?", [name]) is not None:
        raise StoreError(f"simulated data set '{name}': exists already")
    return int(store._scalar(
        "INSERT INTO simulated_datasets (name, arch, blocks, model, folder, samples_wanted) VALUES (?, ?, ?, ?, ?, ?)"
        " RETURNING id", [name, arch, _json(list(blocks)), _json(dict(model)), folder, int(samples_wanted)]))


def dataset(store: Store, name: str) -> dict[str, Any] | None:
    """One data set with ``blocks`` and ``model`` parsed, or None when there is none of that name."""
    return json_row(store, f"SELECT {', '.join(_COLUMNS)} FROM simulated_datasets WHERE name = ?", [name], _COLUMNS,
                    ["blocks", "model"])


def update_dataset(store: Store, name: str, *, samples_done: int | None = None, samples_wanted: int | None = None) -> None:
    """Record progress (samples whose shards are written) or a new target."""
    for column, value in (("samples_done", samples_done), ("samples_wanted", samples_wanted)):
        if value is not None:
            store._exec(f"UPDATE simulated_datasets SET {column} = ?, updated_at = current_timestamp WHERE name = ?",
                        [int(value), name])



def datasets(store: Store) -> pd.DataFrame:
    """Every data set (without its block list and model), oldest first, with its block count."""
    frame = store._df("SELECT id, name, arch, blocks, folder, samples_done, samples_wanted, created_at, updated_at"
                      " FROM simulated_datasets ORDER BY id")
    frame.insert(3, "n_blocks", [len(json.loads(b)) for b in frame["blocks"]])
    return frame.drop(columns="blocks")
