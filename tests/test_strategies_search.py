"""Every strategy on a small synthetic table: optimum with enough budget, budget respected,
invalid and failed configurations handled, same seed same run."""

from __future__ import annotations

import numpy as np
import pytest

from engine.strategies import STRATEGIES, available, describe, drive, make_strategy
from tests.strategies_support import small_table

# PF needs a cost model and a graph file: tests/test_strategy_prefilter.py runs it
NAMES = [n for n in STRATEGIES if available(n) and n != "PF"]
#: Model-based strategies return a model's choice: "the optimum" means within 10 % of it here.
MODEL_BASED = {"LM": 1.10, "DOPT": 1.10, "DLMT": 1.10}
ENOUGH = {"GA": {"generations": None}, "LM": {"schedule": [(40, ["a", "I(1/a)"], ["a"]), (20, ["b", "I(b^2)"], ["b"]),
                                                          (10, ["c", "d"], ["c", "d"])], "answer": "best"},
          "DOPT": {"formula": "~ a + I(1/a) + b + I(b^2) + c + d", "answer": "best"}}
#: "Enough" budget per strategy (the table has 264 candidates); the slow learners need far fewer.
BUDGET = {"BO": 60, "TPE": 100, "GA": 150}


@pytest.fixture(scope="module")
def table():
    return small_table()


def run(table, name, budget, seed, options=None):
    strategy = make_strategy(name, table.domain, budget, seed, options=options)
    return drive(strategy, table.evaluate)


@pytest.mark.parametrize("name", NAMES)
def test_finds_the_optimum_with_enough_budget(table, name):
    budget = BUDGET.get(name, 300)
    slowdowns = [table.slowdown(run(table, name, budget, seed, ENOUGH.get(name)).answer_value) for seed in (0, 1)]
    assert min(slowdowns) <= MODEL_BASED.get(name, 1.0) + 1e-12, slowdowns


@pytest.mark.parametrize("name", NAMES)
def test_respects_the_budget_and_handles_invalid_and_failed_rows(table, name):
    for seed in range(3):
        s = run(table, name, 12, seed)
        history = s.history()
        assert s.used <= 12
        assert s.used == int(history["charged"].sum())
        # every charged configuration is distinct and none of them is an invalid one
        charged = history[history["charged"]]
        assert not charged[table.space.names].duplicated().any()
        assert (charged["status"] != "invalid").all()
        if s.best is not None:
            assert np.isfinite(s.best_value) and s.best_value >= table.optimum


def _design_d(strategy) -> float:
    """D-criterion (over every candidate) of the design a DOPT run measured first."""
    from engine.design import criteria

    design = strategy.domain.from_frame(strategy.history().iloc[: strategy.runs])
    X, _ = strategy.columns.matrix(strategy.terms, index=design)
    everything, _ = strategy.columns.matrix(strategy.terms, index=strategy.domain.index)
    return criteria(X, everything).D


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_run(table, name):
    a, b = run(table, name, 20, 7), run(table, name, 20, 7)
    assert a.history().equals(b.history())
    other = run(table, name, 20, 8)
    if name == "DOPT":
        # Over the whole table the seed only picks the exchange's random starts, and they converge on one
        # of a few designs of (nearly) equal D; which one is decided by the last bits of the exchange gains
        # (seeds 7 and 8 give the same run with OPENBLAS_CORETYPE=Nehalem or Prescott, not with Haswell).
        # What another seed must not change is the quality of the design (a random design of 19 rows
        # has a D a third lower or worse).
        assert _design_d(other) == pytest.approx(_design_d(a), rel=0.01)
    elif name not in ("GS",):  # one greedy descent may coincide
        assert not other.history().equals(a.history())


def test_describe_lists_every_strategy_with_its_options():
    rows = {r["name"]: r for r in describe()}
    assert set(rows) == set(STRATEGIES)
    assert rows["DLMT"]["options"]["threshold"] == 0.05 and rows["DLMT"]["options"]["size"] == "2k"
    assert rows["GA"]["options"]["population"] == 20
    assert all(r["summary"] for r in rows.values())
