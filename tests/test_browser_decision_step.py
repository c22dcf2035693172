"""Issue 30 §4 in chromium: a decision taken with "continue from the decisions log" unticked (an analysis of
every measurement) is logged at the step the log is at, and the log shows that number, not None."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import prepare_toy, served, wait_ready

pytestmark = pytest.mark.browser


def prepare_one_decision(db: Path) -> None:
    """The toy study with its measurements (tests.browser_support.prepare_toy) and step 1 already decided."""
    from storage import Store
    from workflows.demo import TOY_STUDY

    prepare_toy(db)
    with Store(db) as store:
        study = store.get_study(TOY_STUDY)
        chosen = {"fix": {"x3": -1.0}, "formula": "y ~ x1 + x2 + x4 + x5 + x6 + x7 + x8"}
        store.log_decision(study, kind="fix-factors", proposed=chosen, chosen=chosen, outcome="accepted",
                           actor="tester", explanation="step 1, decided before the test", step=1)


server = served(prepare_one_decision)


def decisions_log(page):
    """The decisions log's table (the one with a "next model" column)."""
    return page.locator("[data-testid='stDataFrame']").filter(has_text="next model")


def log_steps(page) -> list[str]:
    """The step column of the decisions log (its second column), one cell per decision."""
    rows = decisions_log(page).locator("[role='row']")
    cells = [rows.nth(i).locator("[role='gridcell']") for i in range(rows.count())]
    return [row.nth(1).inner_text().strip() for row in cells if row.count() > 1]


def test_a_decision_taken_without_continuing_is_logged_and_shown_at_the_logs_next_step(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    page.get_by_text(re.compile(r"^Step 2: continue from the decisions log")).click()  # untick: every measurement
    wait_ready(page)
    page.get_by_role("button", name="Accept decision").click()
    page.get_by_text(re.compile(r"^Decision (accepted|edited)")).wait_for()
    wait_ready(page)
    expect(decisions_log(page).locator("[role='row']")).to_have_count(3)  # the header and two decisions
    assert log_steps(page) == ["1", "2"]
    assert "Traceback" not in page.content()
