"""PF, the cost model as a tuner's pre-filter, on the committed generated tile programs: a graph's configurations
as a table study, the model's order of measurement, the online refit, refusals, and the replay through
``tunelab bench`` beside RS."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

from engine.compare.replay import BenchTable
from engine.errors import UserError
from engine.io.paths import REPO_ROOT
from engine.space.factors import Space
from engine.strategies import drive, make_strategy
from engine.surrogates.costmodel.metrics import kendall_tau
from engine.surrogates.costmodel.readers import read_graph
from engine.surrogates.costmodel.tables import graph_table
from engine.surrogates.costmodel.training import CostModel
from tests.conftest import cli, rerun_until

FILES = sorted((REPO_ROOT / "data" / "costmodel" / "tile").glob("*.npz"))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    """A small GNN trained for a few epochs on 12 programs (not the one the tests tune)."""
    path = tmp_path_factory.mktemp("pf") / "model.pt"
    CostModel(hidden=16, layers=2, epochs=4, seed=0, members=1).fit([read_graph(f) for f in FILES[1:13]]).save(path)
    return path


def _table(path: Path) -> BenchTable:
    spec, table = graph_table(read_graph(path), path.stem)
    return BenchTable(spec, table)


def test_a_tile_graph_is_a_table_of_its_chunk_sizes() -> None:
    graph = read_graph(FILES[0])
    spec, table = graph_table(graph, "t")
    assert spec.space.names == ["batch_size"] and spec.objective == "runtime_ns" and spec.direction == "minimize"
    assert sorted(table["batch_size"]) == sorted(graph.config_feat[:, 0].astype(int)) and (table["status"] == "ok").all()
    runtime = graph.runtime.copy()
    runtime[0] = np.nan
    repeated = replace(graph, runtime=np.r_[runtime, 2 * graph.runtime[1:2]], config_feat=np.r_[graph.config_feat, graph.config_feat[1:2]],
                       passes=None)
    _, again = graph_table(repeated, "t")
    assert len(again) == len(table) and again["status"].tolist().count("failed") == 1
    row = again[again["batch_size"] == int(graph.config_feat[1, 0])].iloc[0]
    assert row["value"] == pytest.approx(1.5 * graph.runtime[1])  # the median of two runs


def test_without_refit_pf_measures_in_the_model_order(model_file: Path) -> None:
    bench = _table(FILES[0])
    graph = read_graph(FILES[0])
    pf = make_strategy("PF", bench.domain, 5, seed=0, options={"model": str(model_file), "graph": str(FILES[0]), "refit": 0})
    drive(pf, bench.evaluate)
    scores = CostModel.load(model_file).predict(graph)
    expected = graph.config_feat[np.argsort(scores, kind="stable")[:5], 0].astype(int).tolist()
    assert pf.history()["batch_size"].tolist() == expected and pf.used == 5


def test_refine_learns_the_order_it_is_shown(model_file: Path) -> None:
    model = CostModel.load(model_file)
    graph = read_graph(FILES[0])
    wrong = np.argsort(np.argsort(-model.predict(graph))).astype(float) + 1.0  # the model's order, reversed
    shown = replace(graph, runtime=wrong, normalizer=None)
    before = kendall_tau(model.predict(shown), wrong)
    after = kendall_tau(model.refine(shown, 60).predict(shown), wrong)
    assert before < -0.9 and after > before + 0.5


def test_pf_ranked_by_trees_fits_on_the_other_programs_and_refits_on_its_measurements(tmp_path: Path) -> None:
    """The GBDT ranker: fitted on a folder's graphs of other programs (the tuned program's own file in the folder is
    left out), its first pick is the trees' best, and with refit it measures every configuration once."""
    from engine.surrogates.costmodel.baselines import GBDT

    for f in FILES[:9]:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    bench = _table(FILES[0])
    graph = read_graph(FILES[0])
    options = {"ranker": "gbdt", "train": str(tmp_path), "graph": str(FILES[0]), "refit": 5}
    pf = make_strategy("PF", bench.domain, len(graph.runtime), seed=0, options=options)
    assert sorted(g.program for g in pf.model.training) == sorted(read_graph(f).program for f in FILES[1:9])
    drive(pf, bench.evaluate)
    first = GBDT(seed=0).fit([read_graph(f) for f in FILES[1:9]]).predict(graph)
    history = pf.history()["batch_size"].tolist()
    assert history[0] == int(graph.config_feat[int(np.argmin(first)), 0])
    assert sorted(history) == sorted(graph.config_feat[:, 0].astype(int).tolist())  # each configuration once
    with pytest.raises(UserError, match="PF option 'train': name a folder of graphs of other programs"):
        make_strategy("PF", bench.domain, 5, options={"ranker": "gbdt", "graph": str(FILES[0])})
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / FILES[0].name).write_bytes(FILES[0].read_bytes())
    with pytest.raises(UserError, match="no tile graph of another program"):
        make_strategy("PF", bench.domain, 5, options={"ranker": "gbdt", "train": str(alone), "graph": str(FILES[0])})


def test_pf_refuses_what_it_cannot_use(model_file: Path, tmp_path: Path) -> None:
    bench = _table(FILES[0])
    with pytest.raises(UserError, match="PF option 'model': name the cost model file"):
        make_strategy("PF", bench.domain, 5, options={"graph": str(FILES[0])})
    with pytest.raises(UserError, match="cannot be read"):
        make_strategy("PF", bench.domain, 5, options={"model": str(tmp_path / "none.pt"), "graph": str(FILES[0])})
    renamed = replace(bench.spec.space.factors[0], name="tile")
    with pytest.raises(UserError, match="factor 'tile' is not a configuration column"):
        make_strategy("PF", Space([renamed]), 5, options={"model": str(model_file), "graph": str(FILES[0])})


def test_bench_replays_pf_beside_rs_on_a_graph_study(model_file: Path, db_path: Path) -> None:
    made = cli("costmodel", "study", str(FILES[0]), "--name", "g", "--json", db=db_path)
    assert made.returncode == 0, made.stderr
    study = json.loads(made.stdout)
    assert study["factors"] == ["batch_size"] and study["configurations"] == len(read_graph(FILES[0]).runtime)
    options = json.dumps({"PF": {"model": str(model_file), "graph": study["graph"], "refit": 2}})
    bench = cli("bench", "--table", "g", "--strategies", "RS,PF", "--reps", "3", "--budget", "4", "--jobs", "1",
                "--options", options, "--json", db=db_path)
    assert bench.returncode == 0, bench.stderr
    out = json.loads(bench.stdout)
    assert set(out["strategies"]) == {"RS", "PF"} and out["comparison_id"] is not None
    again = cli("costmodel", "study", str(FILES[0]), "--name", "g", db=db_path)
    assert again.returncode != 0 and "study 'g' already exists" in again.stderr
    missing = cli("costmodel", "study", str(FILES[0]), "--name", "h", "--model", "nope", db=db_path)
    assert missing.returncode != 0 and "no cost model named 'nope'" in missing.stderr


def test_compare_page_prefills_pf_for_a_graph_study_and_runs_it(db_path: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from storage import Store
    from workflows.compare import saved_comparisons
    from workflows.costmodel import graph_study, train

    folder = tmp_path / "train"
    folder.mkdir()
    for f in FILES[1:9]:
        (folder / f.name).write_bytes(f.read_bytes())
    with Store(db_path) as store:
        train(store, str(folder), "small", params={"epochs": 2, "hidden": 16})
        graph_study(store, str(FILES[0]), "graph")
    monkeypatch.setenv("TUNELAB_DB", str(db_path))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "compare.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    assert at.text_input(key="cmp_opt_graph_PF_graph").value == str(FILES[0].resolve())
    assert at.text_input(key="cmp_opt_graph_PF_model").value.endswith("small/model.pt")
    at.multiselect(key="cmp_strategies").set_value(["RS", "PF"])
    at.number_input(key="cmp_reps").set_value(2)
    at.number_input(key="cmp_budget").set_value(4)
    at.number_input(key="cmp_jobs").set_value(1)
    at.button[0].click().run()
    rerun_until(at, lambda at: at.success or at.error)
    assert not at.error and at.success and "Comparison saved" in at.success[0].value
    assert at.dataframe[0].value["strategy"].tolist() == ["RS", "PF"]
    with Store(db_path) as store:
        params = saved_comparisons(store, "graph")["params"].iloc[0]
    assert params["options"]["PF"]["graph"] == str(FILES[0].resolve())
