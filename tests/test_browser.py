"""Real-browser flows: Playwright driving Debian's chromium against ``tunelab serve`` on loopback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser_support import grid_cell, prepare_toy, served, wait_ready
from tests.conftest import BROWSER_TIMEOUT_MS, still_context

pytestmark = pytest.mark.browser
server = served(prepare_toy)


def analyse_everything(page) -> None:
    """On the Analyze page, leave a 'continue from the decisions log' step (an earlier test accepted a
    decision) for the analysis of every measurement, where the model builder is shown."""
    page.get_by_text(re.compile(r"ANOVA \(Type I\)|continue from the decisions log")).first.wait_for()
    carry_on = page.get_by_text("continue from the decisions log")
    if carry_on.count():
        carry_on.first.click()
        wait_ready(page)


def test_create_a_study_from_a_template_and_see_it_listed(server, page):
    page.goto(server + "/")  # Studies is the default page
    wait_ready(page)
    grid_cell(page, "Paper toy problem").wait_for(state="attached")  # a seeded demo study is listed
    page.get_by_label("Study name").first.fill("Browser toy")
    page.get_by_role("button", name="Create study").click()
    page.get_by_text("Created study 'Browser toy'").wait_for()
    wait_ready(page)
    grid_cell(page, "Browser toy").wait_for(state="attached")
    # the study is really stored: the Space page shows its factors
    page.goto(server + "/space")
    wait_ready(page)
    page.get_by_text("Configurations (factorial)").wait_for()


def test_analyze_untick_a_term_accept_a_decision_and_find_it_in_the_log(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    grid_cell(page, "x2").wait_for(state="attached")  # the ANOVA table has a row for x2
    page.get_by_label("linear x2").uncheck(force=True)
    wait_ready(page)
    page.wait_for_function("() => ![...document.querySelectorAll(\"[role='gridcell']\")].some(c => c.innerText.trim() === 'x2')")
    page.get_by_role("button", name="Accept decision").click()
    page.get_by_text("Decision accepted").wait_for()
    wait_ready(page)
    grid_cell(page, "accepted").wait_for(state="attached")  # the decisions log lists it


def test_run_a_design_then_analyze_and_download_an_export(server, page):
    page.goto(server + "/run")
    wait_ready(page)
    page.get_by_text("In the calling process").click()
    page.get_by_role("button", name="Start measuring").click()
    page.get_by_text("Done: 8 results stored").wait_for(timeout=60_000)
    page.goto(server + "/analyze")
    wait_ready(page)
    analyse_everything(page)
    page.get_by_text("ANOVA (Type I)").wait_for()
    page.goto(server + "/export")
    wait_ready(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="HTML report").click()
    path = download.value.path()
    assert "<html" in Path(path).read_text().lower()


def test_build_a_d_optimal_design_and_see_it_saved(server, page):
    page.goto(server + "/design")
    wait_ready(page)
    page.get_by_role("button", name="Build design").click()
    page.get_by_text("D-optimal:").first.wait_for(timeout=60_000)
    page.get_by_role("button", name="Save design into the study").click()
    page.get_by_text("configurations to measure (Run page)").wait_for()
    wait_ready(page)
    grid_cell(page, "dopt").wait_for(state="attached")  # listed among the study's designs


def test_run_a_small_comparison_and_see_the_table_and_a_chart(server, page):
    page.goto(server + "/compare")
    wait_ready(page)
    page.get_by_label("Repetitions").fill("3")
    page.get_by_label("Budget (measurements)").fill("40")
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Comparison saved").wait_for(timeout=120_000)
    wait_ready(page)
    grid_cell(page, "DLMT").wait_for(state="attached")  # the summary table
    page.locator(".js-plotly-plot").first.wait_for()  # a chart


def test_a_hostile_formula_is_refused_and_does_not_stall_another_session(server, browser):
    """Two people on one server: one types a formula whose constant would take hours to compute; they get
    one line, and the other person's Analyze page still renders its ANOVA table meanwhile."""
    hostile, other = (still_context(browser) for _ in range(2))
    try:
        attacker, bystander = hostile.new_page(), other.new_page()
        for p in (attacker, bystander):
            p.set_default_timeout(BROWSER_TIMEOUT_MS)
        attacker.goto(server + "/analyze")
        wait_ready(attacker)
        analyse_everything(attacker)
        box = attacker.get_by_role("textbox", name="Formula").first
        box.fill("~ x1 + I(2**10**10)")
        box.press("Enter")
        bystander.goto(server + "/analyze")  # while the attacker's run is under way
        wait_ready(bystander)
        bystander.get_by_text(re.compile(r"ANOVA \(Type|continue from the decisions log")).first.wait_for()
        alert = attacker.locator("[data-testid='stAlert']", has_text="exponent").first
        alert.wait_for()
        assert "Traceback" not in attacker.content()
        assert len(alert.inner_text().strip().splitlines()) == 1
    finally:
        hostile.close()
        other.close()
