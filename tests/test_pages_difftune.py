"""The Surrogates page's DiffTune learning section through Streamlit's AppTest, over a tiny world: a data set made
by the real CLI, a surrogate trained from the page's form (a background job), an experiment run from the page."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from storage import Store
from storage.difftune.experiments import surrogate
from tests.conftest import cli, run_cli
from tests.page_support import figure, open_section, submit, table

TINY = {"dt_tr_epochs": 1, "dt_tr_embedding": 16, "dt_tr_hidden": 16, "dt_tr_layers": 1, "dt_tr_batch": 64}


@pytest.fixture(scope="module")
def world(data, tmp_path_factory) -> Path:
    """A database with a 1,200-sample data set 'tiny' over 40 anchor blocks, which the dashboard opens."""
    db = tmp_path_factory.mktemp("difftune-page") / "tunelab.duckdb"
    cli("difftune", "dataset", "--arch", "haswell", "--samples", "1200", "--limit", "40", "--chunk", "400",
        "--name", "tiny", db=db, check=True)  # in this process: preparation, not under test
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNELAB_DB", str(db))
        yield db


@pytest.fixture
def trained(world) -> Path:
    """The world with the surrogate 's' the first test trains from the page; trained by the CLI when that test
    did not run (before the dashboard holds the database open)."""
    with Store(world) as store:
        missing = surrogate(store, "s") is None
    if missing:
        run_cli("difftune", "train", "--dataset", "tiny", "--name", "s", "--epochs", "1", "--embedding", "16",
                "--hidden", "16", "--layers", "1", "--batch", "64", db=world, check=True)
    return world


def learning(timeout: float = 120):
    return open_section("DiffTune learning", timeout)


def chart(at, key: str) -> list[dict]:
    """The traces of the chart with that key."""
    return figure(at, key)["data"]


def values(array) -> np.ndarray:
    """A trace's array: plotly's JSON has numeric arrays as base64 ``bdata`` (with a ``shape`` when 2-D)."""
    if isinstance(array, dict):
        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        return flat.reshape([int(n) for n in str(array["shape"]).split(",")]) if "shape" in array else flat
    return np.asarray(array)


def test_train_a_surrogate_from_the_page_and_see_its_curves(world):
    at = learning()
    datasets = table(at, "samples_wanted")
    assert datasets[["name", "arch", "blocks", "samples_done", "samples_wanted"]].values.tolist() == [
        ["tiny", "haswell", 40, 1200, 1200]]
    assert any("tunelab difftune train" in i.value for i in at.info)  # no surrogate yet: how to make one
    at.text_input(key="dt_tr_name").input("s")
    for key, value in TINY.items():
        at.number_input(key=key).set_value(value)
    submit(at, "Train")
    progressed = False
    for _ in range(120):
        if at.success or at.error:
            break
        progressed = progressed or bool(at.get("progress"))
        time.sleep(1.0)
        at.run()
    assert progressed, "no progress bar while the surrogate trained"
    assert not at.exception and not at.error and "Surrogate 's' trained to epoch 1" in at.success[0].value
    row = table(at, "test_mape").iloc[0]
    assert (row["name"], row["dataset"], row["hidden"], row["bound"], row["epochs_done"]) == ("s", "tiny", 16, True, 1)
    assert 0 < row["val_mape"] < 5 and 0 < row["test_mape"] < 5
    curves = {trace["name"]: trace for trace in chart(at, "dt_sg_curves")}
    assert len(values(curves["validation MAPE (per epoch)"]["y"])) == 1 and len(values(curves["moving average"]["x"])) == 15


def test_run_a_recovery_experiment_and_read_its_baselines_heatmap_and_tables(trained):
    at = learning()
    assert any("No experiment stored yet" in i.value for i in at.info)
    at.selectbox(key="dt_ex_kind").set_value("recovery")
    at.number_input(key="dt_ex_budget").set_value(600)
    at.number_input(key="dt_ex_epochs").set_value(3)
    submit(at, "Run experiment", timeout=300)
    assert not at.exception and not at.error, (at.exception, at.error)
    assert at.success and "(recovery) stored" in at.success[0].value
    accuracy = table(at, "kendall_tau")
    assert {"DiffTune (random start)", "greedy (random start)", "RS search (random start)", "simple table"} <= set(
        accuracy["predictor"])
    assert list(accuracy["mape"]) == sorted(accuracy["mape"])
    assert table(at, "simulator calls").set_index("method").loc["DiffTune (data set)", "simulator calls"] == 1200
    assert "dispatch_width" in table(at, "rob_size").columns
    assert chart(at, "dt_ex_scatter") and {"greedy (random start)", "DiffTune (random start)"} <= {t["name"] for t in chart(at, "dt_ex_curves")}
    assert next(s for s in at.selectbox if s.label == "Learnt table").value == "DiffTune (random start)"  # no defaults start
    at.radio(key="dt_ex_reference").set_value("defaults").run(timeout=120)  # the truth's table: the random start differs
    assert not at.exception and not at.error
    (heat,) = chart(at, "dt_ex_heatmap")
    assert heat["type"] == "heatmap" and heat["x"][:2] == ["uops", "latency"] and 0 < len(heat["y"]) <= 30
    assert values(heat["z"]).shape == (len(heat["y"]), len(heat["x"])) and heat["zmid"] == 0
    assert {b.label for b in at.download_button} == {"Learnt table (JSON)", "Learnt table (DiffTune key-value .txt)"}


def test_bad_experiment_input_is_one_error_line(trained, tmp_path):
    at = learning()
    at.selectbox(key="dt_ex_kind").set_value("this-cpu")
    at.text_input(key="dt_ex_measured").input(str(tmp_path / "nowhere.csv"))
    submit(at, "Run experiment")
    assert not at.exception
    assert len(at.error) == 1 and "is not a file" in at.error[0].value
    at.text_input(key="dt_ex_strategies").input("RS,XX")
    at.selectbox(key="dt_ex_kind").set_value("recovery")
    submit(at, "Run experiment")
    assert not at.exception and len(at.error) == 1 and "XX" in at.error[0].value


def test_extend_the_data_set_from_the_page_and_refuse_another_arch(trained):
    at = learning()
    at.text_input(key="dt_ds_name").input("tiny")
    at.selectbox(key="dt_ds_arch").set_value("skylake")
    at.number_input(key="dt_ds_samples").set_value(1400)
    submit(at, "Simulate")
    assert not at.exception and len(at.error) == 1 and "is for 'haswell'" in at.error[0].value
    at.selectbox(key="dt_ds_arch").set_value("haswell")
    submit(at, "Simulate")
    assert not at.exception and not at.error and "1,400 samples over 40 blocks (200 simulated now" in at.success[0].value
    assert table(at, "samples_wanted")[["samples_done", "samples_wanted"]].values.tolist() == [[1400, 1400]]


def test_without_torch_the_data_sets_still_show_and_the_rest_says_why(world, monkeypatch):
    monkeypatch.setattr("workflows.difftune.views.find_spec", lambda name: None)  # the runtime install (make run)
    at = learning()
    assert [h.value for h in at.header] == ["Simulated data sets"]
    assert any("needs PyTorch" in i.value for i in at.info)
