"""BO's start counts the factors that vary, failures enter its fit as a penalty, and a step's candidates are
bounded (issue 19)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from engine.compare.replay import BenchTable
from engine.space.factors import Factor, Space
from engine.strategies import drive, make_strategy
from engine.strategies.bayes import features
from engine.strategies.domain import Domain
from engine.study import StudySpec

LEVELS = tuple(range(12))


def test_the_start_and_the_features_skip_single_level_factors():
    constant = [Factor(f"k{i}", "integer", (1,)) for i in range(3)]
    space = Space([Factor("x", "integer", LEVELS), Factor("y", "integer", LEVELS), *constant])
    strategy = make_strategy("BO", Domain(space), 50, 0)
    assert strategy.init == 5  # max(5, 2 × 2 varying factors), not 2 × 5
    assert features(strategy.domain, np.array([[0, 11, 0, 0, 0]])).tolist() == [[0.0, 1.0]]


def _failing_table() -> BenchTable:
    """x ≥ 6 fails (a cluster, as on Kernel Tuner spaces); the optimum (5, 5) lies at its edge."""
    rows = [{"x": x, "y": y, "value": np.nan if x >= 6 else 1.0 + 0.1 * (x - 5) ** 2 + 0.1 * (y - 5) ** 2,
             "status": "failed" if x >= 6 else "ok", "error": "boom" if x >= 6 else None}
            for x, y in itertools.product(LEVELS, LEVELS)]
    space = Space([Factor("x", "integer", LEVELS), Factor("y", "integer", LEVELS)])
    return BenchTable(StudySpec(name="failing", space=space, objective="time"), pd.DataFrame(rows), "failing")


def test_failures_in_the_fit_keep_bo_out_of_the_failing_region():
    table = _failing_table()
    failed = {}
    for mode in ("penalty", "ignore"):
        runs = [drive(make_strategy("BO", table.domain, 40, seed, options={"failures": mode}), table.evaluate) for seed in range(3)]
        failed[mode] = sum(int((run.history()["status"] == "failed").sum()) for run in runs)
        assert all(run.used == 40 for run in runs)
    assert failed["penalty"] < 0.7 * failed["ignore"], failed


def test_a_step_scores_a_bounded_number_of_candidates():
    table = _failing_table()
    run = drive(make_strategy("BO", table.domain, 30, 0, options={"candidates": 8}), table.evaluate)
    assert run.used == 30 and not run.history()[["x", "y"]].duplicated().any()
