"""Batch tuning (issue 35 §1): strategies propose as many configurations as the workers take, picks made while
others are measuring stand in the ledger at the constant liar, and ``tunelab tune`` measures on a pool."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.strategies import drive, make_strategy
from engine.strategies.base import PENDING, Pick, Search, Strategy
from engine.study import StudySpec
from storage import Store
from tests.conftest import cli, one_line_error, run_cli
from tests.strategies_support import small_table

MODEL_BASED = ("AUTO", "BO", "TPE", "DLMT", "GA", "RS", "GSR")


@pytest.fixture(scope="module")
def table():
    return small_table()


def _drive_out_of_order(strategy, table, seed: int) -> int:
    """Keep ``strategy.parallel`` configurations out, telling one at random each time (workers that finish in any
    order); returns the most that were out at once."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    most = 0
    while True:
        asked = strategy.ask_index(strategy.parallel - len(out))
        out += list(asked)
        most = max(most, len(out))
        assert strategy.used + len(out) <= strategy.budget
        if not out:
            break
        row = out.pop(int(rng.integers(len(out))))
        strategy.tell_index(row[None, :], *table.evaluate(row[None, :]))
    return most


@pytest.mark.parametrize("name", MODEL_BASED)
def test_out_of_order_results_never_exceed_the_workers_or_the_budget(table, name):
    strategy = make_strategy(name, table.domain, 40, seed=3)
    strategy.parallel = 4
    most = _drive_out_of_order(strategy, table, seed=3)
    assert strategy.finished and strategy.used == 40 and strategy.in_flight == 0
    assert most == 4  # picks were made while others were out (designs and populations hand out 4 at a time)
    charged = strategy.history().query("charged")
    assert len(charged) == 40 and not charged.duplicated(subset=list(table.domain.names)).any()


@pytest.mark.parametrize("name", ["AUTO", "TPE", "BO"])
def test_one_worker_runs_exactly_as_before(table, name):
    """``parallel`` 1 (the default) hands a pick out alone and waits for it: the runs are the sequential ones."""
    one = drive(make_strategy(name, table.domain, 30, seed=5), table.evaluate)
    again = make_strategy(name, table.domain, 30, seed=5)
    again.parallel = 1
    _drive_out_of_order(again, table, seed=0)
    assert one.history()["value"].equals(again.history()["value"])


class _Picks(Strategy):
    """Random valid configurations, one Pick at a time: the base's pending points and nothing else."""

    name = "PICKS"

    def _search(self) -> Search:
        for row in self.domain.random_valid(self.budget, self.rng):
            yield Pick(row)


def test_a_pending_pick_stands_at_the_liar_until_its_result_replaces_it(table):
    strategy = _Picks(table.domain, 10, seed=0)
    strategy.parallel = 2
    first = strategy.ask_index(2)
    assert len(first) == 2 and strategy.in_flight == 2  # nothing measured yet: the liar has no value to stand at
    assert len(strategy.measured()[0]) == 0 and len(strategy.measured(ok_only=False)[0]) == 1
    strategy.tell_index(first, *table.evaluate(first))
    worst = strategy.measured()[1].max()  # the liar (base.LIAR): the worst loss measured
    pending = strategy.ask_index(2)  # two picks: the second made while the first is out
    assert len(pending) == 2 and strategy.in_flight == 2
    codes = table.domain.encode(pending).tolist()
    ledger = dict(zip(*(a.tolist() for a in strategy.measured())))
    assert ledger[codes[0]] == pytest.approx(worst) and codes[1] not in ledger
    assert strategy.is_known(codes[0]) and strategy.result_of(codes[0]) is None
    values, statuses = table.evaluate(pending[:1])
    strategy.tell_index(pending[:1], values, statuses)
    assert strategy.result_of(codes[0]) == (pytest.approx(values[0]), "ok") and strategy.used == 3
    assert dict(zip(*(a.tolist() for a in strategy.measured())))[codes[0]] == pytest.approx(values[0])


def test_tpe_keeps_a_pending_pick_as_a_running_trial_and_tells_it_later(table):
    strategy = make_strategy("TPE", table.domain, 30, seed=2)
    strategy.parallel = 3
    _drive_out_of_order(strategy, table, seed=2)
    assert strategy.used == 30
    history = strategy.history()
    assert not history.duplicated(subset=list(table.domain.names)).any()  # a running trial is not proposed again
    assert PENDING not in set(history["status"])


def _rendezvous_study(db, folder) -> None:
    spec = StudySpec.from_dict({
        "name": "batch", "objective": "cost",
        "factors": [{"name": "x", "kind": "integer", "levels": list(range(12))},
                    {"name": "y", "kind": "integer", "levels": list(range(6))},
                    {"name": "folder", "kind": "categorical", "levels": [str(folder)]}],
        "runner": {"kind": "python", "callable": "tests.helpers.measure_funcs:rendezvous", "path": "."}})
    with Store(db) as store:
        store.create_study(spec)


@pytest.mark.parametrize("strategy", ["BO", "AUTO"])
def test_tune_measures_on_a_pool_two_at_once(db_path, tmp_path, strategy):
    """The run's first measurement succeeds only when a second one started beside it (tests.helpers.measure_funcs)."""
    folder = tmp_path / "meet"
    folder.mkdir()
    _rendezvous_study(db_path, folder)
    done = run_cli("tune", "--study", "batch", "--strategy", strategy, "--budget", "14", "--executor", "local",
                   "--workers", "2", "--auto", "--json", db=db_path, check=True)
    assert json.loads(done.stdout)["budget_used"] == 14
    with Store(db_path) as store:
        rows = store.measurements("batch")
    assert len(rows) == 14 and rows["status"].eq("ok").all(), rows["error"].dropna().tolist()


def test_workers_with_a_scheduler_is_refused_in_one_line(db_path, tmp_path):
    _rendezvous_study(db_path, tmp_path)
    refused = cli("tune", "--study", "batch", "--budget", "5", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1",
                  "--workers", "4", db=db_path)
    one_line_error(refused, "--workers 4")
    refused = cli("tune", "--study", "batch", "--budget", "5", "--executor", "local", "--cluster-port", "8786", db=db_path)
    one_line_error(refused, "--cluster-port 8786")


def test_a_design_fills_the_last_round_of_the_workers(table):
    """With 4 workers a design's runs come in rounds of 4: the last round is filled with runs, not left part idle."""
    one = make_strategy("DLMT", table.domain, 60, seed=1)
    four = make_strategy("DLMT", table.domain, 60, seed=1)
    four.parallel = 4
    sizes = len(one.ask_index()), len(four.ask_index())
    assert sizes[1] % 4 == 0 and sizes[0] <= sizes[1] < sizes[0] + 4 and four.log[0]["size"] == sizes[1]


def test_a_steps_predicted_best_is_measured_beside_the_next_design_not_alone(table):
    """Sequentially, each DLMT step ends with its predicted best measured alone (with 8 workers, 7 idle for one
    measurement); batch tuning measures it while the next design is built and measured, and settles whether it
    improved (AUTO's patience) once that design is back: no round of one configuration while the steps last."""
    rounds = {}
    for parallel in (1, 8):
        strategy = make_strategy("DLMT", table.domain, 80, seed=2, options={"refine": 0, "patience": 1})
        strategy.parallel = parallel
        sizes = []
        while not strategy.finished:
            index = strategy.ask_index(parallel)
            if not len(index):
                break
            sizes.append(len(index))
            strategy.tell_index(index, *table.evaluate(index))
        rounds[parallel] = sizes
        assert strategy.log[0].get("design") and strategy.in_flight == 0
    assert 1 in rounds[1]  # the lone predictions of the sequential run (asked one round at a time)
    assert min(rounds[8][:-1]) > 1, rounds[8]  # the last round may be the final step's prediction
