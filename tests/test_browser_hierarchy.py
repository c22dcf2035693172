"""Issue 30 §2 in chromium: removing a main effect in the effect summary removes the terms that contain it, and the
panel says so before the click (the model never keeps I(x6^2) without x6). Its own server: run after the profiler
test on the same server, the first pick's option list did not open (noted in issue 30's closing note). A likely cause,
seen again once tests stopped sleeping after each rerun: the click lands while the page's charts are still being
drawn and the layout moves; ``_pick`` opens the list again when no option shows."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from tests.browser_support import served, wait_ready
from tests.test_browser_proposal import prepare

pytestmark = pytest.mark.browser
server = served(prepare)


def _pick(page, term: str) -> None:
    """Choose ``term`` in "Terms to remove" until the panel says what removing it takes along: a rerun still under
    way (after Undo) can rebuild the widget and drop a choice made a moment before."""
    said = page.get_by_text(f"Removing {term} also removes")
    box = page.locator("[data-testid='stMultiSelect']").filter(has_text="Terms to remove")
    chosen = box.locator("[data-baseweb='tag']", has_text=term)
    for _ in range(3):
        if not chosen.count():
            option = page.get_by_role("option", name=term, exact=True)
            for _ in range(3):  # the page may still be drawing its charts, and a click while the layout shifts
                box.locator("input").click()  # lands beside the input: open the list again
                try:
                    option.wait_for(timeout=5_000)
                    break
                except PlaywrightTimeoutError:
                    page.keyboard.press("Escape")
            option.click()
            wait_ready(page)
            page.keyboard.press("Escape")
        try:  # a dropped choice is chosen again after 10 s, not after the whole element timeout
            expect(said).to_be_visible(timeout=10_000)
            return
        except AssertionError:
            continue  # the choice was dropped by a rerun: choose again
    expect(said).to_be_visible()


def test_removing_a_main_effect_removes_the_terms_that_contain_it(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    formula = page.get_by_role("textbox", name="Formula").first
    expect(formula).to_have_value(re.compile(r"I\(x6\^2\)"))
    _pick(page, "x6")
    page.get_by_role("button", name="Remove", exact=True).click()
    wait_ready(page)
    expect(formula).not_to_have_value(re.compile(r"x6"))
    expect(formula).to_have_value(re.compile(r"I\(x5\^3\)"))  # the other factors' terms stay
    page.get_by_role("button", name="Undo").click()
    wait_ready(page)
    expect(formula).to_have_value(re.compile(r"I\(x6\^2\)"))
    _pick(page, "x6")
    expect(page.get_by_text("Removing x6 also removes I(x6^2), I(x6^3)")).to_be_visible()  # said before the click
