"""The Compare page in a real browser: a meaningful status from the click on, the new comparison
shown when it ends, one distinct colour per strategy in every chart, and table headers in words."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser_support import grid_cell, prepare_toy, served, wait_ready
from workflows.compare import DEFAULT_STRATEGIES

pytestmark = pytest.mark.browser
server = served(prepare_toy)

#: Every text the progress bar shows, recorded in the page every 50 ms (the bar lives only seconds).
RECORD_STATUS = """() => { window.statuses = []; setInterval(() => {
    const text = [...document.querySelectorAll("[data-testid='stProgress']")].map(e => e.innerText.trim()).join(' | ');
    if (text && window.statuses[window.statuses.length - 1] !== text) window.statuses.push(text); }, 50); }"""
#: Per chart, the colour of each trace that has a legend entry (one per strategy).
LEGEND_COLOURS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.data
    .filter(t => t.showlegend !== false)
    .map(t => (t.type === 'bar' || t.mode === 'markers') ? t.marker && t.marker.color : t.line && t.line.color))"""


def run_comparison(page, server: str, reps: int, budget: int) -> list[str]:
    """Run a comparison of the default strategies on the table study; the statuses it showed."""
    page.goto(server + "/compare")
    wait_ready(page)
    if page.get_by_text("No table study yet").count():
        pytest.skip("no table study: the shared data folder is absent")
    page.get_by_label("Repetitions").fill(str(reps))
    page.get_by_label("Budget (measurements)").fill(str(budget))
    page.evaluate(RECORD_STATUS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_test_id("stProgress")).to_contain_text(re.compile(r"Starting|\d+ runs"))
    try:
        page.get_by_text("Comparison saved").wait_for(timeout=120_000)
    except Exception as error:  # say what the progress bar last said: a hang and a slow run read differently
        raise AssertionError(f"no 'Comparison saved' after 120 s; statuses: {page.evaluate('() => window.statuses')}") from error
    wait_ready(page)
    return page.evaluate("() => window.statuses")


def test_compare_status_from_the_first_instant_distinct_colours_and_worded_headers(server, page):
    statuses = run_comparison(page, server, reps=3, budget=40)
    assert statuses, "no progress status was shown while the comparison ran"
    assert statuses[0].startswith("Starting"), statuses
    assert not [s for s in statuses if "()" in s or s.startswith("0/1 runs")], statuses
    total = 3 * len(DEFAULT_STRATEGIES)  # 3 repetitions of each default strategy
    # after every run, the unfinished strategies' counts: "4/15 runs · GA 1/3 · DLMT 0/3 ..."
    assert any(re.match(rf"\d+/{total} runs · [A-Z]+ [0-2]/3", s) for s in statuses[1:]), statuses

    grid_cell(page, "DLMT").wait_for(state="attached")
    headers = [h.strip() for h in page.locator("[role='columnheader']").all_inner_texts() if h.strip()]
    assert "Mean slowdown" in headers and [h for h in headers if "_" in h] == [], headers

    page.locator(".js-plotly-plot").first.wait_for(state="attached")
    charts = page.evaluate(LEGEND_COLOURS)
    assert len(charts) == 4
    for colours in charts:
        assert len(colours) == len(DEFAULT_STRATEGIES) and None not in colours and len(set(colours)) == len(colours), colours
        assert colours == charts[0]  # a strategy has the same colour in every chart


def test_a_finished_comparison_replaces_the_one_shown_before(server, page):
    page.goto(server + "/compare")
    wait_ready(page)
    if not page.get_by_text(re.compile(r"\d+ repetitions, budget \d+")).count():  # run alone: open one first
        run_comparison(page, server, reps=3, budget=40)
    run_comparison(page, server, reps=2, budget=30)
    expect(page.get_by_test_id("stProgress")).to_have_count(0)  # the page refreshed: no stale status bar
    expect(page.get_by_text("2 repetitions, budget 30")).to_be_visible()  # the new comparison is open
