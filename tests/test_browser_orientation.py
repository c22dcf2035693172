"""Issue 17 in chromium: captions that tell the truth (Space counts, Design candidates, the runs warning
beside the design it is about) and orientation (start here, the guide, the browser's dark preference,
the menu with its Settings)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from engine.io.paths import data_dir
from tests.browser_support import prepare_toy, served, wait_ready
from tests.conftest import still_context
from workflows.demo import LAPLACIAN_STUDY, MATMUL_STUDY, TOY_STUDY

pytestmark = pytest.mark.browser
server = served(prepare_toy)


def metric(page, label: str):
    """The value of the ``st.metric`` whose label starts with ``label``."""
    return page.locator("[data-testid='stMetric']", has_text=label).locator("[data-testid='stMetricValue']")


def number(locator) -> int:
    return int(locator.inner_text().replace(",", ""))


def test_an_unconstrained_space_is_counted_exactly_not_estimated(server, page):
    page.goto(f"{server}/space?study={quote(TOY_STUDY)}")
    wait_ready(page)
    factorial = metric(page, "Configurations (factorial)")
    expect(factorial).to_have_text(re.compile(r"^[\d,]+$"))
    valid = page.locator("[data-testid='stMetric']", has_text=re.compile(r"^Valid"))
    expect(valid).not_to_contain_text("estimated")  # no constraint: every configuration is valid, exactly
    expect(metric(page, "Valid")).to_have_text(factorial.inner_text())


def test_a_table_study_counts_the_rows_of_its_table_not_the_product_of_its_levels(server, page):
    csv = data_dir() / "laplacian" / "search_space.csv" if data_dir() else None
    if csv is None or not csv.is_file():
        pytest.skip("the Laplacian data set is absent")
    from engine.io.table_import import import_table

    imported = import_table(csv, objective="time_per_pixel", name=LAPLACIAN_STUDY)  # what the demo seeded
    rows, ok, factorial = len(imported.table), int((imported.table["status"] == "ok").sum()), imported.spec.space.size
    assert rows < factorial
    page.goto(f"{server}/space?study={quote(LAPLACIAN_STUDY)}")
    wait_ready(page)
    expect(page.get_by_role("combobox", name="Study")).to_have_value(LAPLACIAN_STUDY)
    expect(metric(page, "Rows in the table")).to_have_text(f"{rows:,}")
    expect(metric(page, "Valid rows")).to_have_text(f"{ok:,}")
    expect(page.locator("[data-testid='stMetric']", has_text="Configurations")).to_have_count(0)
    expect(page.get_by_text(f"{factorial:,}")).to_have_count(0)  # the level product is nowhere on the page


def test_design_says_whether_candidates_are_a_sample(server, page):
    caption = page.get_by_text(re.compile(r"^Candidates: [\d,]+ valid configurations"))
    page.goto(f"{server}/design?study={quote(TOY_STUDY)}")  # 11^8 configurations: too many to list
    wait_ready(page)
    expect(caption).to_have_text(re.compile(r"^Candidates: 20,000 valid configurations \(a uniform sample\b"))
    for study in (MATMUL_STUDY, LAPLACIAN_STUDY):  # enumerated, and a table's rows: every one, not a sample
        page.goto(f"{server}/design?study={quote(study)}")
        wait_ready(page)
        if page.get_by_role("combobox", name="Study").input_value() != study:
            continue  # not seeded here (no gcc, no data set)
        expect(caption).to_have_text(re.compile(r"^Candidates: [\d,]+ valid configurations \(every one\)$"))


def test_the_runs_warning_is_never_shown_beside_a_design_of_other_settings(server, page):
    page.goto(f"{server}/design?study={quote(TOY_STUDY)}")
    wait_ready(page)
    coefficients = page.get_by_text(re.compile(r"^\d+ coefficients \(intercept included\)"))
    k = int(coefficients.inner_text().split()[0])
    shown = page.get_by_role("heading", name=re.compile(r"^D-optimal: \d+ runs"))
    warning = page.locator("[data-testid='stAlert']", has_text="cannot estimate")
    earlier = page.get_by_text(re.compile(r"design built earlier used other settings"))
    page.get_by_text(re.compile(r"^Keep the \d+ measured")).click()  # the design then holds only its runs
    wait_ready(page)
    page.get_by_role("button", name="Build design").click()
    expect(shown).to_have_text(re.compile(rf"^D-optimal: {2 * k} runs"), timeout=60_000)  # the 2k rule
    wait_ready(page)

    page.get_by_text("My own number").click()
    wait_ready(page)
    runs = page.get_by_role("spinbutton", name="Runs", exact=True)
    runs.fill("3")
    runs.press("Enter")
    wait_ready(page)
    expect(warning).to_contain_text(f"Runs = 3 (above) is fewer than this model's {k} coefficients")
    expect(shown).to_have_count(0)  # the 2k-run design is not left beside a warning about 3 runs
    expect(earlier).to_contain_text(f"The {2 * k}-run design")

    page.get_by_role("button", name="Build design").click()
    wait_ready(page)
    expect(page.locator("[data-testid='stAlert']", has_text=f"trials 3 is fewer than the {k} coefficients")
           ).to_be_visible()
    expect(shown).to_have_count(0)
    expect(earlier).to_have_count(0)  # the failed build dropped the earlier design: nothing to go back to

    runs.fill(str(k + 1))
    runs.press("Enter")
    wait_ready(page)
    expect(warning).to_have_count(0)  # recomputed from the widgets, not left from the 3-run attempt
    page.get_by_role("button", name="Build design").click()
    expect(shown).to_have_text(re.compile(rf"^D-optimal: {k + 1} runs"), timeout=60_000)
    expect(warning).to_have_count(0)


def test_start_here_names_the_demo_studies_and_links_each_step_and_the_guide(server, page):
    page.goto(server + "/")
    wait_ready(page)
    expect(page.get_by_text("Start here: the method in six steps")).to_be_visible()
    expect(page.get_by_text(re.compile(rf"^Demo studies, in the list above: {re.escape(TOY_STUDY)}"))).to_be_visible()
    links = page.locator("[data-testid='stPageLink']")
    expect(links).to_have_count(6)
    page.get_by_text("The guide: README.md").click()
    expect(page.get_by_role("heading", name="Two commands")).to_be_visible()  # the README, read with no network
    expect(page.get_by_role("heading", name="Layout")).to_be_visible()
    links.nth(1).click()  # 2. Space
    page.wait_for_url(re.compile(r"/space"))
    wait_ready(page)
    expect(page.get_by_role("heading", name="Space").first).to_be_visible()


def test_the_main_menu_is_shown_with_its_settings(server, page):
    page.goto(server + "/")
    wait_ready(page)
    menu = page.locator("[data-testid='stMainMenu']")
    expect(menu).to_be_visible()
    menu.get_by_role("button").click()
    expect(page.get_by_role("menuitemradio", name="System")).to_be_checked()  # the theme, for the user to set
    expect(page.get_by_role("menuitemradio", name="Dark")).to_be_visible()


@pytest.mark.parametrize(("scheme", "dark"), [("dark", True), ("light", False)])
def test_the_theme_follows_the_browser_preference(server, browser, scheme, dark):
    context = still_context(browser, color_scheme=scheme, viewport={"width": 1200, "height": 800})
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
