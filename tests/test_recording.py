"""Results committed a round at a time (issue 35 §3): one transaction per round of results, each reported as stored
only once it is, and a ``kill -9`` of the owner mid-run loses nothing reported and re-measures nothing stored."""

from __future__ import annotations

import sys

import pytest

from engine.execution import Campaign
from engine.runners import runner_from_spec
from engine.runners.base import MeasureResult
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store, StoreError
from tests.conftest import kill_after, run_cli
from workflows.recording import store_recorder

SPACE = Space([Factor("x", "integer", tuple(range(10))), Factor("sleep", "ordinal", (0.05,))])
RUNNER = {"kind": "python", "callable": "tests.helpers.measure_funcs:stamped", "path": ".", "repeats": 2}


def _study(store: Store):
    return store.create_study(StudySpec("rounds", SPACE, objective="t", runner=RUNNER))


def test_many_measurements_in_one_statement_skip_what_is_stored(db_path):
    with Store(db_path) as store:
        study = _study(store)
        rows = [{"config": {"x": x, "sleep": 0.05}, "repeat": r, "value": x + r / 10, "strategy": "RS", "step": 2}
                for x in range(4) for r in range(2)]
        assert store.record_measurements(study, rows) == 8
        assert store.record_measurements(study, rows[:3] + [{**rows[0], "repeat": 2, "status": "failed", "value": None,
                                                              "error": "crashed"}]) == 1
        with pytest.raises(StoreError, match="status 'weird'"):
            store.record_measurements(study, [{**rows[0], "repeat": 3, "status": "weird"}])
        stored = store.measurements("rounds")
    assert len(stored) == 9 and stored["repeat"].tolist() == [0, 1] * 4 + [2]
    assert stored["value"].tolist()[:8] == [x + r / 10 for x in range(4) for r in range(2)]
    assert stored.iloc[-1]["status"] == "failed" and stored.iloc[-1]["error"] == "crashed"
    assert set(stored["strategy"]) == {"RS"} and set(stored["step"]) == {2}


def test_a_result_is_reported_only_once_its_round_is_committed(db_path):
    echoed = []
    with Store(db_path) as store:
        study = _study(store)
        record = store_recorder(store, study, design_id=None, strategy="design", echo=lambda c, r: echoed.append(c["x"]))
        for x in (3, 1):
            record({"x": x, "sleep": 0.05}, MeasureResult(float(x), repeat=0))
        assert echoed == [] and store.measurements("rounds").empty  # held until the round ends
        record.flush()
        assert echoed == [3, 1] and store.measurements("rounds")["x"].tolist() == [3, 1]


def test_the_owner_killed_mid_run_loses_nothing_it_reported_and_measures_the_rest_once(db_path):
    with Store(db_path) as store:
        study = _study(store)
        store.save_design(study, SPACE.enumerate(), name="all", kind="full")
    command = [sys.executable, "-m", "app.cli", "--db", str(db_path), "run", "--study", "rounds", "--executor", "local",
               "--workers", "2"]
    reported = kill_after(command, 7, lambda line: tuple(line.split()[1:4]) if line.startswith("committed") else None)
    with Store(db_path) as store:
        before = store.measurements("rounds")
    stored = {(f"[{x},0.05]", "repeat", f"{r}:") for x, r in zip(before["x"], before["repeat"])}
    assert set(reported) <= stored and len(before) < 20
    run_cli("run", "--study", "rounds", "--executor", "local", "--workers", "2", db=db_path, check=True)
    with Store(db_path) as store:
        after = store.measurements("rounds")
    assert len(after) == 20 and not after.duplicated(subset=["x", "repeat"]).any()
    kept = before.merge(after, on=["x", "repeat"], suffixes=("_before", "_after"))
    assert len(kept) == len(before) and (kept["measurement_id_before"] == kept["measurement_id_after"]).all()


def test_a_round_cut_short_keeps_the_results_that_had_arrived(db_path):
    """A callback failing on the third result (as Ctrl-C would land) leaves the first two stored, not dropped."""
    with Store(db_path) as store:
        study = _study(store)
        record = store_recorder(store, study, strategy="design")

        calls = []

        def on_result(config, result):
            record(config, result)
            calls.append(config["x"])
            if len(calls) == 3:  # the third result is held, its round not yet committed
                raise KeyboardInterrupt

        runner = runner_from_spec({"kind": "python", "callable": "tests.helpers.measure_funcs:quadratic", "timeout": None},
                                  space=SPACE)
        on_result.flush = record.flush
        with pytest.raises(KeyboardInterrupt):
            Campaign(runner, space=SPACE).run([{"x": x, "sleep": 0.05} for x in range(6)], on_result)
        assert len(store.measurements("rounds")) == 3
