"""Cross-validating cost models side by side: the same program-grouped folds for every model, the noise floor of
repeated configurations, and the whole loop through the CLI into a real database file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine.errors import UserError
from engine.surrogates.costmodel.baselines import CompilerDefault
from engine.surrogates.costmodel.evaluate import cross_validate, noise_floor, noise_line
from engine.surrogates.costmodel.graph import TensorGraph
from storage import Store
from storage.costmodel import evaluation_predictions
from tests.conftest import cli, run_cli


def _graph(name: str, program: str, runtime: list[float], config: list[list[float]], default: int | None = 0) -> TensorGraph:
    n = 3
    return TensorGraph(name=name, program=program, task="tile", opcodes=np.array(["parameter", "exp", "add"]),
                       node_feat=np.ones((n, 1), np.float32), feat_names=("dim_product",),
                       edges=np.array([[1, 0], [2, 1]]), node_splits=np.array([0]),
                       config_feat=np.asarray(config, np.float32), runtime=np.asarray(runtime, float), default=default)


def test_the_noise_floor_comes_from_configurations_measured_twice() -> None:
    twice = _graph("a", "p", [100.0, 120.0, 300.0, float("nan")], [[1], [1], [2], [2]])
    once = _graph("b", "q", [1.0, 2.0], [[1], [2]])
    floor = noise_floor([twice, once])
    assert floor["source"] == "repeats" and floor["configurations"] == 1
    assert floor["median_log_ratio"] == pytest.approx(np.log(1.2)) and "tau_ceiling" not in floor
    assert noise_floor([once]) == {}
    assert noise_line({}).startswith("Noise floor: the data holds no configuration measured twice")
    stored_before = {"repeated": 6.0, "median_log_ratio": 0.02, "max_log_ratio": 0.75}  # an evaluation stored by an older Tunelab
    assert noise_line(stored_before) == ("Noise floor: 6 configurations measured twice or more differ by a median 2.0% "
                                         "(|log ratio|), at most 75.0%.")


def test_the_noise_floor_comes_from_the_stored_passes_when_the_files_keep_them() -> None:
    """Pass 1 against pass 2 of each configuration both timed; an error run and a run one pass missed are left out,
    and pass 1's ranking scored against pass 2's is the τ no model can beat."""
    passes = np.array([[100.0, 110.0, np.nan], [200.0, 190.0, 195.0], [300.0, np.nan, np.nan], [50.0, 50.0, np.nan]])
    timed = replace(_graph("a", "p", [100.0, 190.0, 300.0, float("nan")], [[1], [2], [3], [4]]), passes=passes)
    swapped = replace(_graph("b", "q", [10.0, 11.0], [[1], [2]]), passes=np.array([[10.0, 12.0], [11.0, 11.0]]))
    floor = noise_floor([timed, swapped])
    spreads = np.abs(np.log([100 / 110, 200 / 190, 10 / 12, 1.0]))
    assert floor["source"] == "passes" and floor["configurations"] == 4
    assert floor["median_log_ratio"] == pytest.approx(np.median(spreads)) and floor["max_log_ratio"] == pytest.approx(spreads.max())
    assert floor["tau_ceiling"] == pytest.approx((1.0 + -1.0) / 2)  # a agrees on its two runs, b swaps them
    line = noise_line(floor)
    assert line.startswith("Noise floor: 4 configurations timed in two passes differ by a median ")
    assert "pass 1 ranks the configurations against pass 2 with τ 0.000" in line
    one_each = [replace(_graph(f"g{i}", f"p{i}", [5.0], [[1]]), passes=np.array([[5.0, 6.0]])) for i in range(2)]
    assert "tau_ceiling" not in noise_floor(one_each)  # one configuration per graph: no ranking to agree on


def test_every_model_is_scored_on_the_same_held_out_programs() -> None:
    graphs = [_graph(f"k{i}", f"p{i % 4}", [1.0 + i % 3, 2.5, 3.0 + i], [[1], [2], [3]], default=i % 3) for i in range(8)]
    result = cross_validate(graphs, ["default", "gbdt"], folds=4, seeds=[0, 1], params={"gbdt": {"max_iter": 5}})
    scores = result.scores
    assert set(scores["model"]) == {"default", "gbdt"} and len(scores) == 2 * 2 * 8  # models × seeds × graphs
    for _, rows in scores.groupby(["model", "seed"]):
        assert sorted(rows["graph"]) == sorted(g.name for g in graphs)  # each graph held out once per seed
        assert (rows.groupby("program")["fold"].nunique() == 1).all()  # a program is never split
    folds_of = scores.groupby(["seed", "graph"])["fold"].nunique()
    assert (folds_of == 1).all()  # both models saw the same split of a seed
    default = scores[scores["model"] == "default"]
    best = {g.name: int(np.nanargmin(g.runtime)) == g.default for g in graphs}
    assert ((default["slowdown_1"] == 1.0) == default["graph"].map(best)).all()
    assert len(result.predictions) == 2 * 2 * 8 * 3 and set(result.table["model"]) == {"default", "gbdt"}


def test_bad_requests_are_one_line_errors() -> None:
    graphs = [_graph("a", "p", [1.0, 2.0], [[1], [2]]), _graph("b", "q", [1.0, 2.0], [[1], [2]])]
    for models, message in ((["roofline"], "does not apply to the tile task"), (["xgb"], "'xgb' is not one of"),
                            ([], "name at least one")):
        with pytest.raises(UserError, match=message):
            cross_validate(graphs, models, folds=2, seeds=[0])
    with pytest.raises(UserError, match="seeds"):
        cross_validate(graphs, ["default"], folds=2, seeds=[-1])
    unmarked = CompilerDefault().fit(graphs).predict(_graph("c", "r", [1.0, 2.0], [[1], [2]], default=None))
    assert (unmarked == unmarked[0]).all()  # no default run: no preference


def test_the_cli_evaluates_the_real_tpu_kernels_and_stores_every_prediction(data: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    out = run_cli("costmodel", "evaluate", "--models", "heuristic,gbdt,default", "--seeds", "0", "--folds", "3",
                  "--params", '{"gbdt": {"max_iter": 20}}', "--json", db=db, check=True)
    done = json.loads(out.stdout)
    table = {row["model"]: row for row in done["models"]}
    assert set(table) == {"heuristic", "gbdt", "default"} and all(row["graphs"] == 15 for row in table.values())
    assert all(0 < row["tau"] <= 1 and 1 <= row["slowdown_1"] < 3 for row in table.values())
    assert done["noise"]["source"] == "repeats" and done["noise"]["configurations"] >= 1  # no passes in these files
    assert done["notes"] == []  # the converted files name every column
    with Store(db) as store:
        rows = evaluation_predictions(store, done["evaluation"])
    assert len(rows) == 3 * 754 and rows["runtime"].isna().sum() == 3 * 2  # every run, the 2 error runs kept as NaN
    for args, message in ((["--models", "roofline"], "does not apply to the tile task"),
                          (["--data", str(tmp_path / "nowhere")], "neither a folder"),
                          (["--seeds", "a"], "--seeds"), (["--params", '{"gbdt": 3}'], "--params")):
        result = cli("costmodel", "evaluate", *args, db=db)  # refusals: in this process, after the real one
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_one_configuration_per_graph_prints_errors_only_with_the_noise_floor_of_the_stored_passes(tmp_path: Path) -> None:
    """The absolute task's graphs hold one configuration each: the CLI prints MAPE and no τ or slowdown (a lone
    configuration is always 'the best'), and the noise floor from the two passes the generator kept."""
    from workflows.costmodel import GENERATED

    folder = tmp_path / "absolute"
    folder.mkdir()
    for file in sorted(GENERATED["cpu-absolute"].glob("*.npz"))[:40]:
        (folder / file.name).write_bytes(file.read_bytes())
    out = run_cli("costmodel", "evaluate", "--data", str(folder), "--models", "roofline,gbdt", "--seeds", "0",
                  "--folds", "2", "--params", '{"gbdt": {"max_iter": 10}}', db=tmp_path / "t.duckdb", check=True).stdout
    header = next(line for line in out.splitlines() if line.split()[:1] == ["model"])
    assert "mape" in header and "tau" not in header and "slowdown" not in header, out
    assert "configurations timed in two passes differ by a median" in out and "pass 1 ranks" not in out, out


def test_a_foreign_graph_s_widths_are_stated_in_one_line(tmp_path: Path) -> None:
    """Layout graphs of another schema (70 node features, 10 per-node configuration columns, no names) are read
    and evaluated, and the output says so in one line."""
    rng = np.random.default_rng(0)
    for i in range(4):
        np.savez(tmp_path / f"foreign_{i}.npz", node_opcode=rng.integers(0, 5, 12), node_feat=rng.random((12, 70), np.float32),
                 edge_index=np.array([[j + 1, j] for j in range(11)]), node_config_ids=np.array([3, 7]),
                 node_config_feat=rng.random((6, 2, 10), np.float32), config_runtime=rng.integers(100, 200, 6))
    out = run_cli("costmodel", "evaluate", "--data", str(tmp_path), "--models", "gbdt", "--seeds", "0", "--folds", "2",
                  "--params", '{"gbdt": {"max_iter": 5}}', db=tmp_path / "t.duckdb", check=True).stdout
    notes = [line for line in out.splitlines() if "carry no feature names" in line]
    assert len(notes) == 1, out
    assert notes[0].startswith("4 of 4 graphs carry no feature names: 70 node features (no schema Tunelab knows: ")
    assert "10 configuration columns" in notes[0] and "140 in TpuGraphs as published" in notes[0]


def test_a_trained_gnn_is_kept_beside_the_database(data: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch_geometric")
    db = tmp_path / "t.duckdb"
    params = '{"hidden": 8, "epochs": 2, "graphs_per_step": 4}'
    out = json.loads(run_cli("costmodel", "train", "--name", "tiny", "--params", params, "--json", db=db, check=True).stdout)
    assert out["graphs"] == 15 and (Path(out["folder"]) / "model.pt").is_file()
    again = cli("costmodel", "train", "--name", "tiny", db=db)
    assert again.returncode != 0 and "exists already" in again.stderr
    bad = cli("costmodel", "train", "--name", "x", "--params", '{"hidden": 0}', db=db)
    assert bad.returncode != 0 and "hidden" in bad.stderr and "Traceback" not in bad.stderr


def test_the_committed_generated_data_sets_are_named() -> None:
    """Each named set resolves to its committed folder (the joint one read whole through its name); the larger
    ones are checked on 40 files spread over the folder, as reading 10,000 files would take a minute."""
    from engine.surrogates.costmodel.readers import read_graph
    from workflows.costmodel import GENERATED, load_graphs

    for name, task in (("cpu-tile", "tile"), ("cpu-joint", "tile"), ("cpu-large", "tile"), ("cpu-absolute", "absolute")):
        files = sorted(GENERATED[name].glob("*.npz"))
        if not files:
            pytest.fail(f"{GENERATED[name]} holds no committed files")
        graphs = load_graphs(name) if name == "cpu-joint" else [read_graph(f) for f in files[::max(1, len(files) // 40)]]
        assert {g.task for g in graphs} == {task} and len({g.program for g in graphs}) >= 10
