"""Issue 17 in chromium: captions that tell the truth (Space counts, Design candidates, a design built
with other settings) and orientation (start here, the browser's dark preference, the menu)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser_support import prepare_toy, served, wait_ready
from workflows.demo import LAPLACIAN_STUDY, TOY_STUDY

pytestmark = pytest.mark.browser
server = served(prepare_toy)


def metric(page, label: str):
    return page.locator("[data-testid='stMetric']", has_text=label).locator("[data-testid='stMetricValue']")


def test_the_space_counts_are_exact_when_they_are_and_a_table_study_counts_its_rows(server, page):
    page.goto(f"{server}/space?study={quote(TOY_STUDY)}")
    wait_ready(page)
    factorial = metric(page, "Configurations (factorial)")
    expect(factorial).to_have_text(re.compile(r"^[\d,]+$"))
    valid = page.locator("[data-testid='stMetric']", has_text=re.compile(r"^Valid"))
    expect(valid).not_to_contain_text("estimated")  # no constraint: every configuration is valid, exactly
    expect(metric(page, "Valid")).to_have_text(factorial.inner_text())
    page.goto(f"{server}/space?study={quote(LAPLACIAN_STUDY)}")
    wait_ready(page)
    rows = metric(page, "Valid (measured rows of the table)")
    if not page.get_by_role("combobox", name="Study").input_value() == LAPLACIAN_STUDY:
        pytest.skip("the Laplacian data set is absent")
    expect(rows).to_have_text(re.compile(r"^[\d,]+$"))
    measured = int(rows.inner_text().replace(",", ""))
    assert 0 < measured < int(metric(page, "Configurations (factorial)").inner_text().replace(",", ""))


def test_design_says_whether_candidates_are_a_sample_and_when_the_shown_design_is_stale(server, page):
    page.goto(f"{server}/design?study={quote(TOY_STUDY)}")
    wait_ready(page)
    expect(page.get_by_text(re.compile(r"^Candidates: [\d,]+ valid configurations \((every one|a uniform sample)"))
           ).to_be_visible()
    page.get_by_role("button", name="Build design").click()
    page.get_by_text("D-optimal:").first.wait_for(timeout=60_000)
    wait_ready(page)
    stale = page.get_by_text("The settings above changed since this design was built")
    expect(stale).to_have_count(0)
    starts = page.get_by_label("Random starts")
    starts.fill("7")
    starts.press("Enter")
    wait_ready(page)
    expect(stale).to_be_visible()


def test_start_here_links_each_step_and_the_menu_is_there(server, page):
    page.goto(server + "/")
    wait_ready(page)
    guide = page.get_by_text("Start here: the method in six steps")
    expect(guide).to_be_visible()
    links = page.locator("[data-testid='stPageLink']")
    expect(links).to_have_count(6)
    expect(page.locator("[data-testid='stMainMenu']")).to_be_visible()
    links.nth(1).click()  # 2. Space
    page.wait_for_url(re.compile(r"/space"))
    wait_ready(page)
    expect(page.get_by_role("heading", name="Space").first).to_be_visible()


@pytest.mark.parametrize(("scheme", "dark"), [("dark", True), ("light", False)])
def test_the_theme_follows_the_browser_preference(server, browser, scheme, dark):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1200, "height": 800})
    try:
        page = context.new_page()
        page.goto(server + "/")
        wait_ready(page)
        expect(page.get_by_role("heading", name="Studies").first).to_be_visible()
        rgb = page.evaluate("() => getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor")
        red, green, blue = (int(v) for v in re.findall(r"\d+", rgb)[:3])
        assert ((red + green + blue) / 3 < 100) == dark, rgb
    finally:
        context.close()
