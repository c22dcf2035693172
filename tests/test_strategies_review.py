"""Paused tuning runs: the decisions-log bookkeeping that lets a person answer between two calls."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.errors import UserError
from engine.execution import review
from engine.strategies import make_strategy
from tests.strategies_support import small_table


@pytest.fixture(scope="module")
def proposal():
    table = small_table()
    s = make_strategy("DLMT", table.domain, 60, seed=2, options={"auto": False})
    while s.pending_decision is None:
        rows = s.ask_index()
        s.tell_index(rows, *table.evaluate(rows))
    return s.pending_decision


def frame(entries: list[dict]) -> pd.DataFrame:
    """A decisions log as ``Store.decisions`` returns it (JSON text columns, ids in order)."""
    rows = [{"id": i + 1, **{k: json.dumps(v) if k in ("evidence", "proposed", "chosen") else v for k, v in e.items()}}
            for i, e in enumerate(entries)]
    return pd.DataFrame(rows)


def test_a_proposal_stays_pending_until_answered_and_the_answer_is_found_by_run_and_step(proposal):
    run = review.run_key("DLMT", 2, 60, {"auto": False, "threshold": 0.05})
    assert run == review.run_key("DLMT", 2, 60, {"threshold": 0.05, "auto": True})  # auto is not part of the run
    other = review.run_key("DLMT", 3, 60, {})
    asked = review.log_entry(run, proposal, 1)
    assert asked["outcome"] == "proposed" and asked["chosen"] is None and asked["kind"] == review.KIND
    log = frame([asked, {**review.log_entry(other, proposal, 1)}, {"kind": "fix-factors", "outcome": "accepted",
                                                                 "step": 1, "evidence": {}}])
    waiting = review.pending(log)
    assert waiting["run"] == other and waiting["step"] == 1  # the newest open proposal
    assert review.taken(log, run, 1) == (None, True) and review.taken(log, run, 2) == (None, False)
    answer = review.resolve(proposal, "edit", "ana", fix={"d": 1}, note="known")
    log = frame([asked, review.log_entry(run, answer, 1)])
    assert review.pending(log) is None
    found, logged = review.taken(log, run, 1)
    assert logged and found.status == "edited" and found.chosen["fix"] == {"d": 1} and found.by == "ana"


def test_resolve_checks_its_action(proposal):
    assert review.resolve(proposal, "accept", "ana").chosen == proposal.proposed
    assert review.resolve(proposal, "reject", "ana").chosen is None
    with pytest.raises(UserError, match="fix"):
        review.resolve(proposal, "edit", "ana")
    with pytest.raises(UserError, match="'maybe'"):
        review.resolve(proposal, "maybe", "ana")


def test_accepting_an_unchanged_proposal_is_an_accept_and_a_touched_one_an_edit(proposal):
    assert proposal.settle("ana", fix=dict(proposal.proposed["fix"]), formula=proposal.proposed["formula"]).status == "accepted"
    assert proposal.settle("ana", fix={}).status == "edited"
    assert proposal.settle("ana", formula="y ~ 1").chosen["formula"] == "y ~ 1"
