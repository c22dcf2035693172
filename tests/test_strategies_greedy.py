"""GS's a-priori check (dlmt.md §4.3): a neighbour that passes it but is absent from the table is a
runtime failure that still costs 1; one that fails it is free."""

from __future__ import annotations

import pytest

from engine.errors import UserError
from engine.strategies import drive, make_strategy
from tests.strategies_support import small_table

CHECK = ["a * b <= 256"]  # the table's holes are a * b > 128: 128 < a * b <= 256 pass the check and fail


@pytest.fixture(scope="module")
def table():
    return small_table()


def charged_rows(table, name, seed, options):
    s = drive(make_strategy(name, table.domain, 119, seed, options=options), table.evaluate)
    history = s.history()
    assert s.used == int(history["charged"].sum())
    return history[history["charged"]]


@pytest.mark.parametrize("name", ["GS", "GSR"])
def test_absent_neighbours_passing_the_check_are_charged(table, name):
    absent = 0
    for seed in range(20):
        charged = charged_rows(table, name, seed, {"apriori": CHECK})
        product = charged["a"] * charged["b"]
        assert (product <= 256).all()  # failing the check: never run
        failed = charged["status"] == "invalid"
        assert (product[failed] > 128).all() and (product[~failed] <= 128).all()
        absent += int(failed.sum())
        without = charged_rows(table, name, seed, None)
        assert (without["status"] != "invalid").all()
    assert absent > 0


def test_bad_apriori_check_is_one_line_error(table):
    with pytest.raises(UserError, match="nope"):
        make_strategy("GS", table.domain, 10, 0, options={"apriori": ["nope > 1"]})


def test_recount_charges_every_neighbour_evaluated_again(table):
    extra = 0
    for seed in range(10):
        plain = drive(make_strategy("GS", table.domain, 119, seed), table.evaluate)
        counted = drive(make_strategy("GS", table.domain, 119, seed, options={"recount": True}), table.evaluate)
        # the same walk, the same new measurements and answer; each revisited neighbour paid again
        assert int(counted.history()["charged"].sum()) == plain.used and counted.answer == plain.answer
        assert counted.used >= plain.used and len(counted.trace()) == counted.used
        extra += counted.used - plain.used
    assert extra > 0
    gsr = drive(make_strategy("GSR", table.domain, 60, 0, options={"recount": True}), table.evaluate)
    assert gsr.used == 60 and int(gsr.history()["charged"].sum()) < 60  # revisits eat into the fixed budget
