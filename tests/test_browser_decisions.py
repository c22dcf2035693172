"""The decision loop in chromium (issue 17): an edited fix rebuilds the next model, an intercept-only
model is refused while factors stay free, and the person's note is kept in the log and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import grid_cell, predicted_export, prepare_toy, served, wait_ready

pytestmark = pytest.mark.browser
server = served(prepare_toy)


def next_model(page):
    return page.get_by_role("textbox", name="Model for the next step")


def grid_texts(page) -> list[str]:
    """Every accessible cell of the page's ``st.dataframe`` tables."""
    grid_cell(page, "Residuals").wait_for(state="attached")
    return [t.strip() for t in page.locator("[role='gridcell']").all_inner_texts()]


def test_the_anova_table_shows_significant_digits_and_blanks(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    cells = grid_texts(page)  # the ANOVA table (the coefficients wait in a closed expander; no log yet)
    assert "x5" in cells and "Residuals" in cells
    assert not [c for c in cells if c in ("0.0000", "None", "nan") or re.fullmatch(r"0+\d", c)], cells
    assert any(re.fullmatch(r"\d(\.\d)?e-\d\d|< 2e-16", c) for c in cells), cells  # x5's p, not 0.0000


def test_unticking_a_proposed_fix_puts_its_factor_back_into_the_next_model(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    box = next_model(page)
    box.wait_for()
    proposed = box.input_value()
    fixed = page.get_by_role("checkbox", name="fix x3")
    assert fixed.is_checked() and "x3" not in proposed.split("~")[1]
    fixed.uncheck(force=True)
    wait_ready(page)
    page.wait_for_function("() => [...document.querySelectorAll('input')].some("
                           "i => i.getAttribute('aria-label') === 'Model for the next step' && / x3\\b/.test(i.value))")
    rebuilt = next_model(page).input_value()
    assert "x3" in rebuilt and set(proposed.split("~")[1].split(" + ")) <= set(rebuilt.split("~")[1].split(" + "))


def test_an_intercept_only_next_model_is_refused_while_factors_stay_free(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    page.get_by_role("checkbox", name="fix x3").uncheck(force=True)
    wait_ready(page)
    box = next_model(page)
    box.fill("y ~ 1")
    box.press("Enter")
    wait_ready(page)
    page.get_by_role("button", name="Accept decision").click()
    alert = page.locator("[data-testid='stAlert']", has_text="estimates no factor").first
    alert.wait_for()
    assert "x3" in alert.inner_text() and "Traceback" not in page.content()
    page.get_by_text("No decisions recorded yet.").wait_for()  # nothing was stored


def test_the_decision_note_is_stored_shown_in_the_log_and_in_the_report(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    page.get_by_role("checkbox", name="fix x3").uncheck(force=True)
    wait_ready(page)
    note = page.get_by_role("textbox", name="Note (optional)")
    note.fill("x3 looked flat; re-measure before fixing")
    note.press("Enter")
    wait_ready(page)
    page.get_by_role("button", name="Accept decision").click()
    page.get_by_text("Decision edited").wait_for()
    wait_ready(page)
    grid_cell(page, "x3 looked flat").wait_for(state="attached")  # the log's note column
    grid_cell(page, "edited").wait_for(state="attached")
    page.goto(server + "/export")
    wait_ready(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="HTML report").click()
    report = Path(download.value.path()).read_text()
    assert "x3 looked flat; re-measure before fixing" in report and '{"fix"' not in report


def test_a_factor_left_out_of_the_model_is_not_determined_on_analyze_nor_exported(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    page.get_by_text("continue from the decisions log").click()  # the note's decision left step 2 unmeasured
    wait_ready(page)
    term = page.get_by_label("linear x2")
    expect(term).to_have_count(1)  # a slow rerun can show the old builder beside the new one for a moment
    term.uncheck(force=True)
    wait_ready(page)
    caption = page.get_by_text("Predicted best configuration:")
    expect(caption).to_contain_text("not determined by the model: x2")  # waits for the rerun
    assert "x2 =" not in caption.inner_text()
    page.get_by_role("button", name="Accept decision").click()
    page.get_by_text("Decision accepted").wait_for()
    exported = json.loads(predicted_export(page, server).inner_text())
    assert exported["undetermined"] == ["x2"] and "x2" not in exported["configuration"]
    assert {"x1", "x5", "x7"} <= set(exported["configuration"])  # fixed by the decisions: kept


def test_the_effect_summary_prunes_the_least_significant_term_and_undo_brings_it_back(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    carry_on = page.get_by_text(re.compile(r"^Step \d+: continue from the decisions log"))
    weakest = page.get_by_role("button", name=re.compile(r"^Remove .+ \(least significant\)$"))
    carry_on.or_(weakest).first.wait_for()  # one of them, whatever the log holds: rendered, not only started
    if carry_on.count():  # every measurement, the full model
        carry_on.click()
        wait_ready(page)
    term = re.match(r"Remove (.+) \(least", weakest.inner_text()).group(1)
    cells = "[...document.querySelectorAll(\"[role='gridcell']\")].filter(c => c.innerText.trim() === '%s').length"
    page.wait_for_function(f"() => {cells % term} >= 2")  # a row of the effect summary and one of the ANOVA table
    before = page.evaluate(f"() => {cells % term}")
    undo = page.get_by_role("button", name="Undo")
    expect(undo).to_be_disabled()
    weakest.click()
    wait_ready(page)
    page.wait_for_function(f"() => {cells % term} === 0")
    expect(page.get_by_role("textbox", name="Formula").first).not_to_have_value(re.compile(rf"\b{re.escape(term)}\b"))
    expect(undo).to_be_enabled()
    undo.click()
    wait_ready(page)
    page.wait_for_function(f"() => {cells % term} === {before}")
    expect(undo).to_be_disabled()


def test_withdrawing_the_last_decision_keeps_it_in_the_log_and_steps_back(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    carry_on = page.get_by_text(re.compile(r"^Step \d+: continue from the decisions log"))
    step = int(re.match(r"Step (\d+)", carry_on.inner_text()).group(1))
    page.get_by_role("button", name="Withdraw last decision").click()
    page.get_by_text(re.compile(r"Decision \d+ withdrawn")).wait_for()
    wait_ready(page)
    grid_cell(page, "withdrawn").wait_for(state="attached")
    expect(page.get_by_text(re.compile(r"^Step \d+: continue from the decisions log"))).to_contain_text(
        f"Step {step - 1}:")
