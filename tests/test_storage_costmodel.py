"""The cost model's tables in a real DuckDB file: an evaluation keeps every prediction, a model its row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from storage import Store
from storage.costmodel import evaluation_predictions, evaluations, model, models, save_evaluation, save_model
from storage.store import StoreError


def _predictions() -> pd.DataFrame:
    return pd.DataFrame({"model": ["gnn", "gnn", "gbdt"], "seed": [0, 0, 0], "fold": [1, 1, 1],
                         "graph": ["fusion.1"] * 3, "program": ["p"] * 3, "config": [0, 1, 0],
                         "runtime": [10.0, float("nan"), 10.0], "prediction": [0.5, 0.7, 9.0]})


def test_an_evaluation_and_its_predictions_survive_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    with Store(db) as store:
        first = save_evaluation(store, name="cv", data="tpu-tiles", task="tile", summary={"folds": 5},
                                predictions=_predictions())
        with pytest.raises(StoreError, match="no column 'prediction'"):
            save_evaluation(store, name="bad", data="d", task="tile", summary={},
                            predictions=_predictions().drop(columns="prediction"))
    with Store(db) as store:
        listed = evaluations(store)
        assert listed["id"].tolist() == [first] and listed["summary"][0] == {"folds": 5}  # the bad one left nothing
        rows = evaluation_predictions(store, first)
        assert len(rows) == 3 and rows["runtime"].isna().sum() == 1 and set(rows["model"]) == {"gnn", "gbdt"}


def test_a_model_name_is_unique(tmp_path: Path) -> None:
    with Store(tmp_path / "t.duckdb") as store:
        save_model(store, name="m", data="tpu-tiles", task="tile", params={"hidden": 64}, folder="x/m", seconds=3.0,
                   summary={"val_tau": 0.5})
        with pytest.raises(StoreError, match="exists already"):
            save_model(store, name="m", data="d", task="tile", params={}, folder="y", seconds=0, summary={})
        assert model(store, "m")["params"] == {"hidden": 64} and model(store, "nope") is None
        assert models(store)["name"].tolist() == ["m"]
