"""Measuring blocks into the store (mechanics only: statuses, resuming, passes, the CPU recorded; no figure
of a timing is asserted): a tiny data folder, the real harness, a real DuckDB file, the real CLI."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from engine.errors import UserError
from engine.surrogates.difftune.measure import Settings
from storage import Store
from storage.difftune import block_measurements, cpus
from tests.conftest import cli, run_cli
from workflows.difftune import measure_blocks

BLOCKS = ["4801c0", "4889c3480fafc0", "0f05"]  # add chain, mov + imul, syscall (refused, never run)


@pytest.fixture
def data(tmp_path, monkeypatch):
    (tmp_path / "bhive" / "sources").mkdir(parents=True)
    (tmp_path / "llvm_mca_anchor").mkdir()
    (tmp_path / "llvm_mca_anchor" / "bhive_sample2000_llvm_mca_cycles100.csv").write_text(
        "hex,n_instr,haswell_mca19\n" + "".join(f"{h},1,100\n" for h in BLOCKS))
    with gzip.open(tmp_path / "bhive" / "sources" / "a.csv.gz", "wt") as handle:
        handle.write("".join(f"{h},0.1\n" for h in BLOCKS))
    with gzip.open(tmp_path / "bhive" / "may-alias.csv.gz", "wt") as handle:
        handle.write("ffff\n")
    monkeypatch.setenv("TUNELAB_DATA", str(tmp_path))
    return tmp_path


def test_blocks_are_measured_once_per_cpu_and_pass_and_a_rerun_resumes(data, db_path):
    settings = Settings(repeats=16, min_clean=2, calibration_n=200, calibration_repeats=16)
    with Store(db_path) as store:
        first = measure_blocks(store, source="anchor", settings=settings)
        assert (first.selected, first.already_stored, first.measured) == (3, 0, 3)
        rows = block_measurements(store, first.cpu_id, 1).set_index("hex")
        assert rows.loc["0f05", "status"] == "refused" and "syscall" in rows.loc["0f05", "error"]
        measured = rows.loc[["4801c0", "4889c3480fafc0"]]
        assert set(measured["status"]) <= {"ok", "noisy"}  # a busy machine may make a batch noisy: still stored
        for _, row in measured[measured["status"] == "ok"].iterrows():
            assert row["cycles_min"] > 0 and row["repeats"]["unrolls"][0] % settings.unrolls[0] == 0 and row["repeats"]["ticks_a"]
        settled = int((rows["status"] != "noisy").sum())  # a noisy batch (a disturbed machine) is measured again
        again = measure_blocks(store, source="anchor", settings=settings)
        assert (again.already_stored, again.measured) == (settled, 3 - settled)
        second = measure_blocks(store, source="anchor", pass_=2, settings=settings, progress=lambda *_: None)
        assert second.measured == 3 and len(block_measurements(store, first.cpu_id)) == 6
        assert cpus(store)["cpu_id"].tolist() == [first.cpu_id]


def test_the_cli_measures_and_says_what_it_did(data, db_path):
    result = run_cli("blocks", "measure", "--source", "anchor", "--limit", "1", "--repeats", "16", "--json", db=db_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["selected"] == 1 and out["measured"] == 1 and out["cpu_id"]
    noise = out["noise"]  # the run's noise figure, and its verdict (a busy test machine may trip it: both are fine)
    assert noise["blocks"] + noise["noisy"] == 1
    assert 0 < noise["kept"] <= 1 if noise["blocks"] else noise["kept"] is None  # no ok block: no share to give
    assert noise["busy"] == bool(noise["reasons"]) and ("too busy" in result.stderr) == noise["busy"]
    text = run_cli("blocks", "measure", "--source", "anchor", "--limit", "2", "--repeats", "16", db=db_path)
    assert text.returncode == 0 and "noise: median gap" in text.stdout
    out_file = db_path.parent / "measured.csv.gz"
    exported = run_cli("blocks", "export", "--out", str(out_file), db=db_path)
    assert exported.returncode == 0, exported.stderr
    table = pd.read_csv(out_file)
    assert table["hex"].tolist() == BLOCKS[:2] and {"status", "cycles_min", "cycles_median"} <= set(table.columns)
    bad = cli("blocks", "measure", "--limit", "0", db=db_path)
    assert bad.returncode != 0 and "--limit 0: must be from 1" in bad.stderr


def test_several_passes_are_measured_in_a_row_each_with_its_noise(data, db_path):
    result = cli("blocks", "measure", "--source", "anchor", "--limit", "1", "--repeats", "16", "--passes", "3",
                 "--json", db=db_path)
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["passes"]
    assert [run["pass_number"] for run in runs] == [1, 2, 3] and all(run["measured"] == 1 for run in runs)
    assert all(run["noise"]["compared"] <= 1 for run in runs[1:])  # passes 2 and 3 against pass 1 (if it was ok)
    with Store(db_path) as store:
        assert sorted(set(block_measurements(store)["pass"])) == [1, 2, 3]
    late = cli("blocks", "measure", "--pass", "99", "--passes", "3", db=db_path)
    assert late.returncode != 0 and "would end at pass 101; the last pass is 100" in late.stderr
    assert "Traceback" not in late.stderr


@pytest.fixture
def anchor_data():
    from engine.io.paths import data_dir

    if data_dir() is None or not (data_dir() / "llvm_mca_anchor").is_dir():
        pytest.skip("the data folder is absent")


def test_blocks_are_decoded_once_and_tables_built_stored_and_diffed(anchor_data, db_path):
    from engine.surrogates.difftune import bhive
    from engine.surrogates.difftune.decode import DECODER
    from engine.surrogates.difftune.params import diff
    from storage.difftune import decoded
    from workflows.difftune import build_table, decoded_blocks, stored_table

    hexes = list(bhive.anchor()["hex"][:20])
    with Store(db_path) as store:
        first = decoded_blocks(store, hexes)
        assert len(decoded(store, DECODER, hexes)) == 20 and decoded_blocks(store, hexes) == first
        name, table = build_table(store, "haswell", limit=20)
        assert name == "haswell-default" and stored_table(store, name) == table
        assert {i.key for b in first.values() for i in b.instructions} <= set(table.rows)
        other_name, _ = build_table(store, "skylake", limit=20)
        changed = diff(table, stored_table(store, other_name))
        assert any(changed["field"] == "units") and any(changed["key"] != "*")
        with pytest.raises(UserError, match="'skylake-default': exists already"):
            build_table(store, "skylake", limit=20)
    exported = db_path.parent / "t.parquet"
    result = run_cli("difftune", "table", "export", name, "--out", str(exported), db=db_path)
    assert result.returncode == 0, result.stderr
    same = run_cli("difftune", "table", "diff", name, str(exported), "--json", db=db_path)
    assert same.returncode == 0 and json.loads(same.stdout) == []


def test_an_evaluation_scores_every_predictor_and_is_stored(anchor_data, db_path):
    from storage.difftune import evaluation_predictions, evaluations
    from workflows.difftune import evaluate

    with Store(db_path) as store:
        result = evaluate(store, truth="mca", arch="haswell", limit=30)
        table = result.accuracy.set_index("predictor")
        assert set(table.index) == {"tunelab (default table)", "simple table"} and table["n"].min() == 30
        assert table.loc["tunelab (default table)", "mape"] < table.loc["simple table", "mape"]
        assert set(result.by_category["category"]) <= {f"{k}, {m}" for k in ("scalar", "vector")
                                                      for m in ("no memory", "load", "store", "load+store")}
        assert evaluations(store)["id"].tolist() == [result.id]
        assert len(evaluation_predictions(store, result.id)) == 60
        with pytest.raises(UserError, match="truth 'exact': expected one of mca, measured"):
            evaluate(store, truth="exact")


def test_a_committed_measurements_file_is_a_truth_on_any_machine(db_path, tmp_path):
    """``evaluate --measured FILE``: the file's CPU named by its name, its -mcpu needed unless it is this CPU's;
    each block's truth its robust value over the file's passes."""
    pytest.importorskip("iced_x86")
    from engine.io.paths import REPO_ROOT
    from engine.surrogates.difftune.noise import read_measured, robust_truth

    rows = read_measured(REPO_ROOT / "data" / "difftune" / "intel-6-167-1.csv.gz").head(40)
    mine = tmp_path / "other-cpu-1.csv"
    rows.to_csv(mine, index=False)
    out = cli("difftune", "evaluate", "--truth", "measured", "--measured", str(mine), "--arch", "sapphirerapids",
              "--json", db=db_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["cpu_id"] == "other-cpu-1" and result["arch"] == "sapphirerapids"
    scores = {row["predictor"]: row for row in result["accuracy"]}
    assert {"llvm-mca-19", "simple table", "tunelab (default table)", "tunelab (default table, memory forwarding)"} <= set(scores)
    assert 30 <= scores["llvm-mca-19"]["n"] <= len(robust_truth(rows))
    refusals = [(("--measured", str(mine)), "arch: the measurements are from CPU other-cpu-1"),
                (("--measured", str(tmp_path / "none.csv"), "--arch", "znver3"), "is not a file"),
                (("--truth", "mca", "--measured", str(mine)), "give it with --truth measured")]
    for args, message in refusals:
        extra = () if "--truth" in args else ("--truth", "measured")
        refused = cli("difftune", "evaluate", *extra, *args, db=db_path)
        assert refused.returncode != 0 and message in refused.stderr and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_a_table_learnt_from_measured_blocks_is_stored_and_scored_on_the_held_out_ones(db_path, tmp_path):
    """``table learn``: greedy from the defaults with forwarding, on the training part of a measurements file,
    within its budget; stored, it is scored by ``evaluate --held-out`` on blocks it never saw."""
    pytest.importorskip("iced_x86")
    from engine.io.paths import REPO_ROOT
    from engine.surrogates.difftune.noise import read_measured
    from engine.surrogates.difftune.split import part_of

    rows = read_measured(REPO_ROOT / "data" / "difftune" / "intel-6-167-1.csv.gz").head(150)
    mine = tmp_path / "other-cpu-1.csv"
    rows.to_csv(mine, index=False)
    learnt = cli("difftune", "table", "learn", "--name", "mine", "--measured", str(mine), "--arch", "sapphirerapids",
                 "--budget", "3000", "--json", db=db_path)
    assert learnt.returncode == 0, learnt.stderr
    done = json.loads(learnt.stdout)
    train = sum(part_of(h) == "train" for h in rows["hex"])
    assert done["cpu_id"] == "other-cpu-1" and 0 < done["blocks"] <= train and done["calls"] <= 3000
    listed = json.loads(cli("difftune", "table", "list", "--json", db=db_path).stdout)
    assert "mine" in {t["name"] for t in listed}
    scored = cli("difftune", "evaluate", "--truth", "measured", "--measured", str(mine), "--arch", "sapphirerapids",
                 "--table", "mine", "--held-out", "--json", db=db_path)
    assert scored.returncode == 0, scored.stderr
    result = json.loads(scored.stdout)
    scores = {row["predictor"]: row for row in result["accuracy"]}
    assert result["held_out"] and 0 < scores["tunelab (mine)"]["n"] <= sum(part_of(h) == "test" for h in rows["hex"])
    refused = cli("difftune", "table", "learn", "--name", "again", "--measured", str(mine), "--arch", "sapphirerapids",
                  "--sample", "0", db=db_path)
    assert refused.returncode != 0 and "sample" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
