"""GA's selection and its fresh children (issue 19): every slot of a generation is a new measurement."""

from __future__ import annotations

import pytest

from engine.compare.presets import preset
from engine.strategies import drive, make_strategy
from tests.strategies_support import small_table


@pytest.mark.parametrize("selection", ["tournament", "roulette"])
def test_every_child_is_a_new_measurement(selection):
    """Population 10, budget 100: the first generation measures 10, each later one 9 new children beside its
    elite, so the budget is spent in exactly 10 generations (children re-visiting measured configurations would
    need more)."""
    table = small_table()
    for seed in range(3):
        strategy = drive(make_strategy("GA", table.domain, 100, seed, options={"population": 10, "selection": selection}),
                         table.evaluate)
        history = strategy.history()
        assert strategy.used == 100 and strategy.step == 10
        assert not history[table.space.names].duplicated().any()


def test_tournament_is_the_default_and_the_paper_preset_keeps_its_roulette():
    table = small_table()
    assert make_strategy("GA", table.domain, 50, 0).selection == "tournament"
    options, _ = preset("paper", table.space)
    assert options["GA"]["selection"] == "roulette"
    runs = {s: drive(make_strategy("GA", table.domain, 60, 4, options={"selection": s}), table.evaluate).history()
            for s in ("tournament", "roulette")}
    assert not runs["tournament"].equals(runs["roulette"])
