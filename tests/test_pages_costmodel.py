"""The Surrogates page's Cost model section through Streamlit's AppTest, over a database holding an evaluation made by
the real CLI on the 15 real TPU kernels (cheap baselines only: no GNN is trained here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from storage import Store
from storage.costmodel import evaluations
from tests.conftest import cli
from tests.page_support import figure, open_section, submit, table

CHEAP = ("heuristic", "gbdt", "default")


@pytest.fixture(scope="module")
def world(data, tmp_path_factory) -> Path:
    """A database with one evaluation of the three cheap models (3 folds, seed 0), which the dashboard opens."""
    db = tmp_path_factory.mktemp("costmodel-page") / "tunelab.duckdb"
    cli("costmodel", "evaluate", "--models", ",".join(CHEAP), "--seeds", "0", "--folds", "3",
        "--params", '{"gbdt": {"max_iter": 20}}', db=db, check=True)  # in this process: preparation, not under test
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNELAB_DB", str(db))
        yield db


def section(timeout: float = 120):
    return open_section("Cost model", timeout)


def chart(at, key: str) -> dict:
    return figure(at, key)


def names(at, key: str) -> list[str]:
    return [trace.get("name") for trace in chart(at, key)["data"]]


def test_the_section_shows_the_stored_evaluation(world):
    at = section()
    with Store(world) as store:
        first = int(evaluations(store)["id"].min())  # the CLI's (another test may have stored a newer one)
    at.selectbox(key="cm_pick").set_value(first).run()
    models = table(at, "τ (mean)")
    assert models["model"].tolist() == list(CHEAP) and (models["graphs"] == 15).all()
    assert models["τ (mean)"].between(-1, 1).all() and (models["top-1 slowdown (median)"] >= 1).all()
    assert any(c.value.startswith("Noise floor: 6 configurations") for c in at.caption)
    assert len(names(at, "cm_scatter")) == 15  # one colour per kernel
    assert {"heuristic", "gbdt", "default", "gbdt: top-1 pick"} <= set(names(at, "cm_rank"))
    assert names(at, "cm_topk") == list(CHEAP)
    scores = table(at, "configurations")
    assert len(scores) == 3 * 15 and set(scores["model"]) == set(CHEAP)
    picture = chart(at, "cm_graph")
    assert picture["layout"]["title"]["text"].startswith("fusion.") and "parameter" in names(at, "cm_graph")
    at.selectbox(key=f"cm_rank_graph_{first}").set_value("copy.24").run()
    at.selectbox(key=f"cm_model_{first}").set_value("heuristic").run()
    at.selectbox(key=f"cm_graph_{first}").set_value("reshape.37").run()
    assert not at.exception and not at.error
    assert chart(at, "cm_rank")["layout"]["title"]["text"] == "copy.24"
    assert chart(at, "cm_graph")["layout"]["title"]["text"].startswith("reshape.37: 2 nodes, 1 edges")


def test_evaluate_from_the_page_stores_a_second_evaluation(world):
    at = section()
    at.text_input(key="cm_ev_seeds").input("1")
    at.number_input(key="cm_ev_folds").set_value(3)
    at.multiselect(key="cm_ev_models").set_value(["heuristic", "default"])
    at.text_input(key="cm_ev_name").input("from the page")
    submit(at, "Evaluate")
    assert not at.exception and not at.error, (at.exception, at.error)
    assert at.success and "stored: 2 models on tpu-tiles" in at.success[0].value
    with Store(world) as store:
        stored = evaluations(store)
    assert stored["name"].tolist()[0] == "from the page" and len(stored) >= 2
    assert table(at, "τ (mean)")["model"].tolist() == ["heuristic", "default"]  # the new one is shown


def test_an_evaluation_of_foreign_graphs_says_what_their_columns_are(world, tmp_path):
    """Graphs of another schema (no feature names, 70 node features): the stored evaluation shows the one line."""
    rng = np.random.default_rng(1)
    for i in range(4):
        np.savez(tmp_path / f"foreign_{i}.npz", node_opcode=rng.integers(0, 5, 6), node_feat=rng.random((6, 70), np.float32),
                 edge_index=np.array([[j + 1, j] for j in range(5)]), config_feat=rng.random((5, 3), np.float32),
                 config_runtime=rng.integers(100, 200, 5))
    at = section()
    at.text_input(key="cm_ev_data").input(str(tmp_path))
    at.text_input(key="cm_ev_seeds").input("0")
    at.number_input(key="cm_ev_folds").set_value(2)
    at.multiselect(key="cm_ev_models").set_value(["gbdt"])
    submit(at, "Evaluate")
    assert not at.exception and not at.error, (at.exception, at.error)
    notes = [box.value for box in at.info if "carry no feature names" in box.value]
    assert len(notes) == 1 and "70 node features" in notes[0] and "3 configuration columns" in notes[0]


def test_bad_input_is_one_error_line(world, tmp_path):
    at = section()
    at.text_input(key="cm_ev_data").input(str(tmp_path / "nowhere"))
    at.multiselect(key="cm_ev_models").set_value(["heuristic"])
    submit(at, "Evaluate")
    assert not at.exception and len(at.error) == 1 and "neither a folder of .npz graphs" in at.error[0].value
    at.text_input(key="cm_ev_data").input("tpu-tiles")
    at.text_input(key="cm_ev_seeds").input("0,x")
    submit(at, "Evaluate")
    assert not at.exception and len(at.error) == 1 and "seeds: comma-separated" in at.error[0].value
    at.text_input(key="cm_ev_seeds").input("0")
    at.multiselect(key="cm_ev_models").set_value(["roofline"])
    submit(at, "Evaluate")
    assert not at.exception and len(at.error) == 1 and "does not apply to the tile task" in at.error[0].value


def test_without_torch_the_gnn_is_not_offered(world, monkeypatch):
    import app.costmodel_view as view

    monkeypatch.setattr(view, "find_spec", lambda name: None if name.startswith("torch") else object())
    at = section()
    assert "gnn" not in at.multiselect(key="cm_ev_models").options
    assert at.multiselect(key="cm_ev_models").value == ["gbdt", "heuristic", "default"]
    assert any("make test" in i.value for i in at.info)
    assert not [b for b in at.button if b.label == "Train"]


def test_train_the_gnn_from_the_page(world):
    pytest.importorskip("torch_geometric")
    at = section()
    assert any("No cost model trained yet" in i.value for i in at.info)
    at.text_input(key="cm_tr_name").input("tiny")
    at.number_input(key="cm_tr_epochs").set_value(1)
    at.number_input(key="cm_tr_hidden").set_value(8)
    submit(at, "Train", timeout=300)
    assert not at.exception and not at.error, (at.exception, at.error)
    assert at.success and "Cost model 'tiny' trained on 15 graphs" in at.success[0].value
    row = table(at, "CPU min").iloc[0]
    assert (row["name"], row["epochs"], row["hidden"], row["graphs"]) == ("tiny", 1, 8, 15)
    assert (world.parent / f"{world.name}.costmodels" / "tiny" / "model.pt").is_file()
    submit(at, "Train")  # the same name again
    assert not at.exception and len(at.error) == 1 and "exists already" in at.error[0].value
