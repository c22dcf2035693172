"""Configurations stored with only some of their repeats (issue 29): the command that measures them
again completes their repeats, and says truthfully what it measured and what it found stored.

A ``kill -9`` between the commits of a configuration's two repeats leaves it at 1 of 2 (its repeats
are committed one transaction each); the store below is put in exactly that state with the store's
own API, then a real ``tunelab`` process on the real DuckDB file resumes. The kill itself is tested
in tests/test_hostile_processes.py.
"""

from __future__ import annotations

import json

import pytest

from engine.io.paths import REPO_ROOT
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import cli, run_cli

SPACE = Space([Factor("x", "ordinal", (0, 1, 2)), Factor("y", "ordinal", (0, 1))])
RUNNER = {"kind": "python", "callable": "tests.helpers.measure_funcs:quadratic", "path": str(REPO_ROOT), "repeats": 2}
HALF = ({"x": 0, "y": 0}, {"x": 2, "y": 1})  # 1 of 2 repeats stored, as a kill between the two commits leaves them
FAILED = {"x": 1, "y": 0}  # its second repeat failed: complete, never measured again



def _value(config: dict[str, int]) -> float:
    return float((config["x"] - 3) ** 2 + config["y"])


@pytest.fixture
def partial(db_path):
    """A study of 6 configurations, two of them at 1 of 2 repeats and one complete with a failure."""
    with Store(db_path) as store:
        study = store.create_study(StudySpec("partial", SPACE, objective="y2", runner=RUNNER))
        store.save_design(study, SPACE.enumerate(), name="all", kind="full")
        for config in HALF:
            store.record_measurement(study, config, _value(config), "ok", repeat=0, strategy="RS", step=0)
        store.record_measurement(study, FAILED, _value(FAILED), "ok", repeat=0, strategy="RS", step=0)
        store.record_measurement(study, FAILED, None, "failed", error="crashed", repeat=1, strategy="RS", step=0)
        before = store.measurements("partial")
    return db_path, before


def _check_complete(db_path, before):
    with Store(db_path) as store:
        after = store.measurements("partial")
    assert not after.duplicated(subset=["x", "y", "repeat"]).any()
    repeats = after.groupby(["x", "y"])["repeat"].apply(sorted)
    assert len(repeats) == 6 and all(r == [0, 1] for r in repeats)  # every configuration at 2 of 2
    kept = before.merge(after, on=["x", "y", "repeat"], suffixes=("_before", "_after"))
    assert (kept["measurement_id_before"] == kept["measurement_id_after"]).all()  # re-measured: 0
    for config in HALF:
        second = after[(after["x"] == config["x"]) & (after["y"] == config["y"]) & (after["repeat"] == 1)]
        assert second["status"].tolist() == ["ok"] and second["value"].tolist() == [_value(config)]
    return after


def test_tune_completes_the_missing_repeats_of_partly_measured_configurations_and_says_so(partial):
    db_path, before = partial
    args = ("tune", "--study", "partial", "--strategy", "RS", "--budget", "6", "--seed", "0")
    text = run_cli(*args, db=db_path, check=True).stdout
    after = _check_complete(db_path, before)
    assert len(after) == 12
    # 12 measurements answer the 6 configurations: 8 taken now (2 completing repeats, 3 × 2 new), 4 stored before
    assert ("budget used 6 of 6 configurations (12 measurements: 8 new, 4 stored before; "
            "2 partly measured configurations completed)") in text, text
    again = json.loads(cli(*args, "--json", db=db_path, check=True).stdout)  # the same command once more
    assert (again["budget_used"], again["measurements"], again["measurements_reused"],
            again["configurations_completed"]) == (6, 0, 12, 0)
    again_text = cli(*args, db=db_path, check=True).stdout
    assert "budget used 6 of 6 configurations (12 measurements: 0 new, 12 stored before)" in again_text, again_text


def test_run_completes_the_missing_repeats_of_partly_measured_configurations(partial):
    db_path, before = partial
    text = run_cli("run", "--study", "partial", "--executor", "inline", db=db_path, check=True).stdout
    assert len(_check_complete(db_path, before)) == 12
    assert "(8 results: 8 ok, 0 not ok), 1 already stored" in text, text
