"""Forest picks (AUTO's default hand-off): their features, that they never re-propose a measurement, that they learn
where the objective is low, and AUTO's runs with them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.strategies import drive, make_strategy
from engine.strategies.forest import ForestPicker, ForestSettings, fit_trees, predict_trees, tree_features
from tests.strategies_support import small_table


@pytest.fixture(scope="module")
def table():
    return small_table()


def told(table, rows, seed=0):
    """A strategy that has measured ``rows`` (what a forest pick learns from)."""
    s = make_strategy("RS", table.domain, 500, seed=seed)
    s.tell_index(rows, *table.evaluate(rows))
    return s


def test_features_are_level_indices_and_one_indicator_per_level_of_a_many_level_factor(table):
    index = table.domain.index
    feats = tree_features(table.domain, index)
    # a: 6 levels (index + 6 indicators), b: 8 (1 + 8), c: 2 (index only), d: 3 (1 + 3)
    assert feats.shape == (len(index), 7 + 9 + 1 + 4)
    assert np.array_equal(feats[:, 0], index[:, 0]) and np.array_equal(feats[:, 1:7].argmax(axis=1), index[:, 0])
    assert np.all(feats[:, 1:7].sum(axis=1) == 1) and np.array_equal(feats[:, 16], index[:, 2])


def test_a_pick_is_valid_and_never_a_configuration_measured_or_failed(table):
    rng = np.random.default_rng(0)
    cand = table.domain.index
    failed = cand[[i for i, r in enumerate(cand) if table.evaluate(r[None, :])[1][0] != "ok"]]
    rows = np.vstack([cand[rng.choice(len(cand), 30, replace=False)], failed])
    s = told(table, rows)
    picker = ForestPicker(table.domain, cand)
    tried = set(table.domain.encode(rows).tolist())
    for _ in range(15):
        row = picker.pick(s)
        code = int(table.domain.encode(row[None, :])[0])
        assert code not in tried and table.domain.valid(row[None, :])[0]
        s.tell_index(row[None, :], *table.evaluate(row[None, :]))
        tried.add(code)


def test_picks_learn_where_the_objective_is_low(table):
    # trees fitted to 40 random measurements: their exploiting pick is better than most configurations left
    cand = table.domain.index
    values, statuses = table.evaluate(cand)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        chosen = rng.choice(len(cand), 40, replace=False)
        s = told(table, cand[chosen], seed)
        row = ForestPicker(table.domain, cand, ForestSettings(kappa=0.0)).pick(s)
        left = np.setdiff1d(np.flatnonzero(statuses == "ok"), chosen)
        value = table.evaluate(row[None, :])[0][0]
        assert (values[left] < value).mean() < 0.2, (seed, value)


def test_no_pick_once_every_candidate_is_measured(table):
    cand = table.domain.index
    s = told(table, cand)
    assert ForestPicker(table.domain, cand).pick(s) is None


def test_auto_stops_dlmt_s_steps_when_they_stall_and_spends_the_rest_on_picks_and_local_moves(table):
    s = drive(make_strategy("AUTO", table.domain, 80, seed=1), table.evaluate)
    history = s.history()
    charged = history[history["charged"]]
    assert s.used == 80 and len(charged) == 80
    assert len(set(table.domain.encode(table.domain.from_frame(charged)).tolist())) == 80  # nothing measured twice
    assert "stalled" in s.log[-1]  # the model's steps ended early: a predicted best was no better than the rest
    assert (history["step"] > s.log[-1]["step"]).sum() > 0
    assert table.slowdown(s.best_value) <= 1.05


def test_trees_built_one_by_one_are_scikit_learns_extra_trees():
    """fit_trees skips the ensemble wrapper's per-tree cloning and checks (two thirds of AUTO's CPU): its trees, and
    so every AUTO run measured before, stay those of ExtraTreesRegressor with the same seed."""
    from sklearn.ensemble import ExtraTreesRegressor

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, size=(60, 7)).astype(float), rng.normal(size=60)
    new = rng.integers(0, 5, size=(500, 7)).astype(float)
    settings = ForestSettings(trees=12, max_features=0.6)
    ours = predict_trees(fit_trees(x, y, settings, seed=123), new)
    forest = ExtraTreesRegressor(n_estimators=12, max_features=0.6, random_state=123).fit(x, y)
    assert np.array_equal(ours, np.stack([tree.predict(new) for tree in forest.estimators_]))
    assert not np.array_equal(ours, predict_trees(fit_trees(x, y, settings, seed=124), new))
