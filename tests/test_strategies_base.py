"""The ask/tell contract and the paper's budget accounting, on a small exhaustive table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.strategies import SKIPPED, Strategy, drive, make_strategy
from engine.strategies.domain import Domain
from tests.strategies_support import small_spec, small_table


class Replay(Strategy):
    """Asks fixed batches (level-index rows) and records what it was told."""

    name = "REPLAY"

    def __init__(self, domain, budget, batches, seed=None):
        super().__init__(domain, budget, seed)
        self.batches, self.seen = batches, []

    def _search(self):
        for batch in self.batches:
            result = yield np.array(batch)
            self.seen.append(result)


@pytest.fixture(scope="module")
def table():
    return small_table()


def test_measured_once_is_charged_once_and_asking_again_is_free(table):
    rows = table.domain.index[:3]
    s = Replay(table.domain, 10, [rows, rows[:2], rows])
    first = s.ask_index()
    assert len(first) == 3
    s.tell_index(first, *table.evaluate(first))
    assert s.used == 3
    # the next two batches only repeat measured rows: answered from the ledger, never handed out
    assert len(s.ask_index()) == 0
    assert s.finished and s.used == 3
    assert [len(r.loss) for r in s.seen] == [3, 2, 3]
    np.testing.assert_array_equal(s.seen[1].loss, s.seen[0].loss[:2])


def test_invalid_results_are_free_and_failures_are_charged(table):
    frame = table.table
    failed = table.domain.from_frame(frame[frame["status"] == "failed"].iloc[:1])
    absent = np.array([[5, 7, 1, 2]])  # a=32, b=9: a hole of the table
    s = Replay(table.domain, 10, [np.vstack([failed, absent])])
    asked = s.ask_index()
    values, statuses = table.evaluate(asked)
    assert sorted(statuses) == ["failed", "invalid"]
    s.tell_index(asked, values, statuses)
    assert s.used == 1  # the failure costs, the invalid configuration does not
    assert list(s.seen[0].status) == ["failed", "invalid"] and np.isinf(s.seen[0].loss).all()
    assert s.best is None


def test_budget_is_never_exceeded_and_the_rest_of_a_batch_is_skipped(table):
    s = Replay(table.domain, 4, [table.domain.index[:6]])
    asked = s.ask_index()
    assert len(asked) == 4
    s.tell_index(asked, *table.evaluate(asked))
    assert s.used == 4 and s.finished
    assert list(s.seen[0].status[-2:]) == [SKIPPED, SKIPPED]


def test_constraint_violations_are_answered_invalid_without_being_asked():
    spec = small_spec()
    space = type(spec.space)(spec.space.factors, ["a * b <= 16"])
    domain = Domain(space)
    bad = domain.from_frame(pd.DataFrame([{"a": 32, "b": 8, "c": True, "d": 1}]))
    s = Replay(domain, 5, [bad])
    assert len(s.ask_index()) == 0
    assert s.seen[0].status[0] == "invalid" and s.used == 0


def test_dataframe_ask_tell_and_best(table):
    s = make_strategy("RS", table.domain, 5, seed=3)
    configs = s.ask(2)
    assert list(configs.columns) == table.space.names and len(configs) == 2
    s.tell(configs, [3.0, 2.5])
    rest = s.ask()
    assert len(rest) == 3
    s.tell(rest.to_dict(orient="records"), [None, 9.0, 9.0], ["timeout", "ok", "ok"])
    assert s.used == 5 and s.best["value"] == 2.5
    assert s.best["config"] == configs.iloc[1].to_dict()
    history = s.history()
    assert list(history["status"]) == ["ok", "ok", "timeout", "ok", "ok"] and history["charged"].all()
    trace = s.trace()
    assert len(trace) == 5 and trace[-1] == 2.5


def test_maximize_and_bad_tells(table):
    s = make_strategy("RS", table.domain, 3, seed=0, direction="maximize")
    drive(s, table.evaluate)
    values = s.history()["value"].to_numpy()
    assert s.best_value == np.nanmax(values)
    with pytest.raises(UserError, match="status 'weird'"):
        s.tell_index(table.domain.index[:1], [1.0], ["weird"])
    with pytest.raises(UserError, match="budget"):
        make_strategy("RS", table.domain, 0)
    with pytest.raises(UserError, match="DLMT option 'nope' 1: not an option of DLMT"):
        make_strategy("DLMT", table.domain, 10, options={"nope": 1})
    with pytest.raises(UserError, match="not one of"):
        make_strategy("SA", table.domain, 10)
