"""DiffTune end to end on a tiny data set, through the real CLI and a real database file: simulate a data set,
train a surrogate, run the three experiments (recovery, cross-arch, this CPU's measurements), export the
learnt table in DiffTune's key-value format and measure a block with it in a study's runner. The data set, the
training and one experiment run as real ``tunelab`` processes; the other commands run the same ``main`` in this
process, to spare the interpreter start-up and torch's import."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from engine.io.paths import REPO_ROOT
from engine.runners import runner_from_spec
from storage import Store
from storage.difftune.datasets import dataset
from storage.difftune.experiments import experiments, surrogate
from tests.conftest import cli, run_cli

MEASURED = REPO_ROOT / "data" / "difftune" / "intel-6-167-1.csv.gz"
TINY = ["--embedding", "16", "--hidden", "16", "--layers", "1", "--batch", "64"]
SMALL = ["--budget", "600", "--epochs", "3"]


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("pipeline") / "tunelab.duckdb"
    # In this process (imports paid once; a subprocess spends ~4 CPU-s importing torch): preparation, not under test.
    cli("difftune", "dataset", "--arch", "haswell", "--samples", "1200", "--limit", "40", "--chunk", "400",
        "--name", "tiny", db=db, check=True)
    cli("difftune", "train", "--dataset", "tiny", "--name", "s", "--epochs", "2", *TINY, db=db, check=True)
    return db


def _run(db: Path, *args: str, process: bool = False) -> dict:
    command = ("difftune", "experiment", *args, "--surrogate", "s", *SMALL, "--json")
    result = run_cli(*command, db=db, check=True) if process else cli(*command, db=db)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_training_records_its_progress(trained: Path) -> None:
    with Store(trained) as store:
        row = surrogate(store, "s")
    assert row is not None and row["epochs_done"] == 2 and row["dataset"] == "tiny"
    assert 0 < row["val_mape"] < 5 and 0 < row["test_mape"] < 5
    assert (trained.parent / row["folder"] / "checkpoint.pt").is_file()
    other = cli("difftune", "train", "--dataset", "tiny", "--name", "s", "--epochs", "3", "--hidden", "8", db=trained)
    assert other.returncode != 0 and "not this configuration" in other.stderr and "Traceback" not in other.stderr


def test_recovery_scores_every_method_and_the_parameter_error(trained: Path) -> None:
    out = _run(trained, "recovery", process=True)
    methods = {row["predictor"] for row in out["accuracy"]}
    assert {"random (start)", "simple table", "DiffTune (random start)", "greedy (random start)",
            "RS search (random start)", "BO search (random start)"} <= methods
    assert out["blocks"]["test"] >= 3 and out["costs"]["greedy (random start)"] <= 600 and out["costs"]["DiffTune (data set)"] == 1200
    fields = set(out["recovery"][0]) - {"table"}
    assert fields == {"latency", "uops", "read_advance", "port_cycles", "dispatch_width", "rob_size"}
    greedy = next(r for r in out["accuracy"] if r["predictor"] == "greedy (random start)")
    start = next(r for r in out["accuracy"] if r["predictor"] == "random (start)")
    assert greedy["n"] == start["n"] == out["blocks"]["test"]


def test_cross_arch_and_this_cpu_report_llvm_mca(trained: Path, tmp_path: Path) -> None:
    cross = _run(trained, "cross-arch")
    assert cross["truth"] == "llvm-mca-19 -mcpu=skylake"
    assert {"llvm-mca-19 -mcpu=haswell", "defaults (start)", "skylake defaults (simulator)", "DiffTune (defaults start)",
            "simple (start)", "DiffTune (simple start)", "DiffTune (greedy start)"} <= {r["predictor"] for r in cross["accuracy"]}
    # DiffTune from greedy's table pays for greedy's calls too
    assert cross["costs"]["DiffTune (greedy start): validation"] > cross["costs"]["greedy (defaults start)"]
    here = _run(trained, "this-cpu", "--measured", str(MEASURED), "--arch", "sapphirerapids")
    assert here["truth"] == "measured on intel-6-167-1"
    mca = next(r for r in here["accuracy"] if r["predictor"] == "llvm-mca-19 -mcpu=sapphirerapids")
    assert mca["n"] == here["blocks"]["test"] and mca["mape"] > 0
    with Store(trained) as store:
        stored = experiments(store)
    assert len(stored) >= 2 and {"cross-arch", "this-cpu"} <= set(stored["kind"])
    name = here["tables"]["DiffTune (defaults start)"]
    out = tmp_path / "learned.txt"
    assert cli("difftune", "table", "export", name, "--out", str(out), db=trained).returncode == 0
    assert out.read_text().splitlines()[1].startswith("DispatchWidth ")
    with Store(trained) as store:
        block = dataset(store, "tiny")["blocks"][0]
    runner = runner_from_spec({"kind": "simulator", "hex": block, "table": str(out)})
    assert runner.measure({})[0].ok


def test_an_experiment_says_where_each_long_step_stands(trained: Path) -> None:
    """Not only when a method starts: its steps, simulator calls and best score so far, as it goes."""
    result = cli("difftune", "experiment", "cross-arch", "--surrogate", "s", *SMALL, "--strategies", "RS", db=trained)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert any(re.match(r"  DiffTune from defaults: step \d+ of \d+, validation MAPE [\d.]+% \(best [\d.]+%\), "
                        r"[\d,]+ simulator calls", line) for line in lines), lines
    for label in ("greedy", "RS"):
        assert any(re.match(rf"  {label}: [\d,]+ of 600 simulator calls, best training MAPE [\d.]+%", line)
                   for line in lines), lines


def test_bad_experiment_inputs_are_one_line_errors(trained: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-cpu-0.csv.gz"
    elsewhere.write_bytes(MEASURED.read_bytes())
    for args, message in ((["this-cpu", "--measured", str(elsewhere)], "name its llvm-mca -mcpu with --arch"),
                          (["cross-arch", "--arch", "pentium"], "no llvm-mca-19 column for 'pentium'"),
                          (["recovery", "--strategies", "XX"], "strategy 'XX' is not one of")):
        result = cli("difftune", "experiment", *args, "--surrogate", "s", db=trained)
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
    missing = cli("difftune", "experiment", "recovery", "--surrogate", "nope", db=trained)
    assert missing.returncode != 0 and "none named 'nope'" in missing.stderr


def test_the_calibration_is_a_table_study_that_compare_replays(trained: Path) -> None:
    args = ["difftune", "calibration", "this-cpu", "--surrogate", "s", "--measured", str(MEASURED), "--arch",
            "sapphirerapids", "--blocks", "10"]
    made = cli(*args, "--parameters", "dispatch_width,rob_size", "--name", "calibration", "--json", db=trained)
    assert made.returncode == 0, made.stderr
    made = json.loads(made.stdout)
    assert made["parameters"] == ["dispatch_width", "rob_size"] and made["blocks"] == 10
    assert 0 < made["best_mape"] <= made["start_mape"]
    with Store(trained) as store:
        study = store.get_study("calibration")
        assert study.spec.runner["kind"] == "table" and len(store.study_table("calibration")) == made["configurations"]
    bench = cli("bench", "--table", "calibration", "--strategies", "RS,BO", "--reps", "2", "--budget", "12",
                "--jobs", "1", "--json", db=trained)
    assert bench.returncode == 0, bench.stderr
    replayed = json.loads(bench.stdout)
    assert replayed["optimum"] == pytest.approx(made["best_mape"]) and replayed["comparison_id"] is not None
    assert set(replayed["strategies"]) == {"RS", "BO"} and replayed["strategies"]["BO"]["mean"] >= 1
    for extra, message in ((["--name", "calibration"], "study 'calibration' already exists"),
                           (["--name", "c2", "--parameters", "latency:NOPE"], "NOPE"),
                           (["--name", "c3", "--start", "random", "--blocks", "5"], "--blocks")):
        result = cli(*args, *extra, db=trained)
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
