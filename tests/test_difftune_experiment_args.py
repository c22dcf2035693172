"""``tunelab difftune experiment`` and ``train`` check their arguments before any work (issue 29): a budget that
greedy search or a strategy cannot use, a learning rate or a seed the learning cannot take are one line naming
the option and the value, before the learning stages run and with nothing stored; and a table learnt before the
run stops is kept. Real commands over a real database: a small data set and a tiny surrogate."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from engine.io.paths import REPO_ROOT
from engine.surrogates.difftune.train import split_blocks
from storage import Store
from storage.difftune import evaluations, param_tables
from storage.difftune.experiments import experiments, surrogate
from tests.conftest import cli, one_line_error

BLOCKS = 40
TINY = ["--embedding", "16", "--hidden", "16", "--layers", "1", "--batch", "64"]


@pytest.fixture(scope="module")
def world(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 400-sample data set 'tiny' over 40 anchor blocks and the surrogate 's' trained on it for one epoch."""
    db = tmp_path_factory.mktemp("experiment-args") / "tunelab.duckdb"
    # In this process (imports paid once; a subprocess spends ~4 CPU-s importing torch): preparation, not under test.
    cli("difftune", "dataset", "--arch", "haswell", "--samples", "400", "--limit", str(BLOCKS), "--chunk", "400",
        "--name", "tiny", db=db, check=True)
    cli("difftune", "train", "--dataset", "tiny", "--name", "s", "--epochs", "1", *TINY, db=db, check=True)
    return db


def stored(db: Path) -> tuple[int, int, int]:
    """Tables, evaluations and experiments in the database."""
    with Store(db) as store:
        return len(param_tables(store)), len(evaluations(store)), len(experiments(store))


def test_a_budget_greedy_search_or_a_strategy_cannot_use_fails_before_learning(world: Path) -> None:
    before = stored(world)
    train = len(split_blocks(BLOCKS)[0])  # recovery: every block has a truth
    line = one_line_error(cli("difftune", "experiment", "recovery", "--surrogate", "s", "--budget", "5", db=world),
                          "budget: 5 simulator calls", f"{train} training blocks", status=2)
    assert "block-simulation" not in line  # one unit, the one the help and the output use
    one_line_error(cli("difftune", "experiment", "recovery", "--surrogate", "s", "--budget", str(train + 1), db=world),
                   f"budget: {train + 1} simulator calls", "BO", "1 evaluation", status=2)
    assert stored(world) == before


@pytest.mark.parametrize(("args", "needles"), [
    (["--lr", "inf"], ["lr", "inf"]),
    (["--seed", str(2**32)], ["--seed", str(2**32)]),
])
def test_a_number_the_learning_cannot_take_fails_at_once(world: Path, args: list[str], needles: list[str]) -> None:
    before = stored(world)
    one_line_error(cli("difftune", "experiment", "recovery", "--surrogate", "s", "--budget", "600", *args, db=world),
                   *needles, status=2)
    assert stored(world) == before


def test_training_refuses_a_seed_numpy_cannot_take_before_storing_the_surrogate(world: Path) -> None:
    one_line_error(cli("difftune", "train", "--dataset", "tiny", "--name", "big-seed", "--seed", str(2**32), *TINY, db=world),
                   "--seed", str(2**32), status=2)
    with Store(world) as store:
        assert surrogate(store, "big-seed") is None


@pytest.mark.parametrize(("device", "needle"), [("gpu0", "is not a torch device name"), ("meta", "is not supported")])
def test_training_refuses_a_device_before_storing_the_surrogate(world: Path, device: str, needle: str) -> None:
    one_line_error(cli("difftune", "train", "--dataset", "tiny", "--name", "elsewhere", "--device", device, *TINY, db=world),
                   "device", device, needle)
    with Store(world) as store:
        assert surrogate(store, "elsewhere") is None


def test_a_table_learnt_before_the_run_stops_is_kept(world: Path) -> None:
    """Stopped (SIGTERM, as Ctrl-C) during greedy search, the run keeps DiffTune's table, learnt just before."""
    command = [str(Path(sys.executable).with_name("tunelab")), "--db", str(world), "difftune", "experiment", "recovery",
               "--surrogate", "s", "--budget", str(10**9), "--strategies", "RS", "--epochs", "1"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=REPO_ROOT) as proc:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("greedy search"):
                proc.send_signal(signal.SIGTERM)
                break
        rest = proc.communicate(timeout=120)[1]
    assert proc.returncode != 0 and any(line.startswith("greedy search") for line in seen), "".join(seen) + rest
    with Store(world) as store:
        tables = param_tables(store)
        assert experiments(store).empty
    methods = {p.get("method"): name for name, p in zip(tables["name"], tables["provenance"])}
    assert "DiffTune (random start)" in methods, tables
    assert f"stored table {methods['DiffTune (random start)']}" in "".join(seen)
