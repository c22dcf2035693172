"""TPE's encoding of levels, and its use of the budget (issue 19): levels as choices or on their own scale,
infeasible and failed suggestions pruned, no early stop while valid configurations remain."""

from __future__ import annotations

import numpy as np
import pytest

from engine.space.factors import Factor
from engine.strategies import drive, make_strategy
from engine.strategies.optuna_tpe import level_scale
from tests.strategies_support import small_table

pytest.importorskip("optuna")


def test_levels_lie_on_their_own_scale():
    assert np.allclose(level_scale(Factor("tile", "integer", (1, 2, 4, 8, 16))), np.log([1, 2, 4, 8, 16]))
    assert np.allclose(level_scale(Factor("block", "integer", (16, 32, 48, 64))), [16, 32, 48, 64])
    assert np.allclose(level_scale(Factor("x", "ordinal", (-1.0, 0.0, 1.0))), [-1, 0, 1])  # not all positive: values
    for choice in (Factor("algo", "categorical", ("a", "b")), Factor("flag", "boolean", (False, True)),
                   Factor("one", "integer", (4,))):
        assert level_scale(choice) is None


@pytest.mark.parametrize("encoding", ["categorical", "ordered"])
def test_tpe_spends_the_whole_budget_on_distinct_valid_configurations(encoding):
    """The table has holes (invalid) and a failed row; 200 of its 264 valid configurations are asked for. The old
    wrapper stopped after 500 free suggestions in a row; now the closest unmeasured one stands in at once."""
    table = small_table()
    strategy = drive(make_strategy("TPE", table.domain, 200, 0, options={"encoding": encoding}), table.evaluate)
    history = strategy.history()
    charged = history[history["charged"]]
    assert strategy.used == 200 and not charged[table.space.names].duplicated().any()
    assert (charged["status"] != "invalid").all()
    assert table.slowdown(strategy.answer_value) == 1.0


def test_tpe_stops_when_every_valid_configuration_is_measured():
    table = small_table()
    valid = table.domain.n_candidates
    strategy = drive(make_strategy("TPE", table.domain, valid + 50, 1, options={"startup": 5}), table.evaluate)
    assert strategy.used == valid and strategy.finished


def test_an_unknown_encoding_is_refused():
    from engine.errors import UserError

    with pytest.raises(UserError, match="encoding"):
        make_strategy("TPE", small_table().domain, 10, 0, options={"encoding": "integer"})


def test_nearest_keeps_to_the_suggestion():
    """What TPE (and any strategy) measures instead of a suggestion it cannot use."""
    from engine.space.factors import Space
    from engine.strategies.domain import Domain

    domain = Domain(Space([Factor("a", "integer", (1, 2, 4, 8, 16)), Factor("k", "categorical", ("x", "y", "z"))]))
    rng = np.random.default_rng(0)
    row = np.array([2, 1])
    taken = domain.encode(row[None, :])
    assert domain.nearest(row, np.array([], dtype=np.int64), rng).tolist() == [2, 1]
    near = {tuple(domain.nearest(row, taken, rng)) for _ in range(40)}
    assert near == {(1, 1), (3, 1)}  # one level step (1/4 of the range) beats another category (1)
    assert domain.nearest(row, domain.codes, rng) is None


@pytest.mark.parametrize("encoding", ["categorical", "ordered"])
def test_a_hand_off_tells_tpe_every_measurement_failures_pruned(encoding):
    from optuna.trial import TrialState

    from engine.strategies.optuna_tpe import TPESettings, _Levels, told_study

    table = small_table()
    s = make_strategy("RS", table.domain, 50, seed=0)
    index = table.domain.index
    failed = np.flatnonzero(table.evaluate(index)[1] != "ok")
    rows = index[np.concatenate([failed, [0, 5, 9]])]
    s.tell_index(rows, *table.evaluate(rows))
    levels = _Levels(table.space, encoding)
    study = told_study(s, TPESettings(encoding=encoding), levels)
    states = [t.state for t in study.trials]
    assert states.count(TrialState.PRUNED) == len(failed) and states.count(TrialState.COMPLETE) == 3
    assert study.best_value == s.best_loss
    assert sorted(tuple(levels.row(t.params)) for t in study.trials) == sorted(map(tuple, rows.tolist()))


def test_auto_names_the_missing_optuna_when_it_hands_off_to_tpe(monkeypatch):
    from engine.errors import UserError
    from engine.strategies import optuna_tpe

    monkeypatch.setattr(optuna_tpe, "available", lambda: False)
    with pytest.raises(UserError, match=r"^AUTO option 'then' tpe: needs the optional package optuna"):
        make_strategy("AUTO", small_table().domain, 40, seed=0, options={"then": "tpe"})
