"""Compare in a real browser stores what it ran, under the right name (issue 30 §5): switching the table study, the
Name and the peer form's Space follow it; a comparison of RS alone is named after RS alone; a peer run shows in the
same table and charts as Tunelab's strategies, cut at the comparison's budget."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from storage import Store
from tests.browser_support import grid_cell, served, wait_ready
from tests.test_compare_naming import alpha_comparison, make_tables, peer_rows
from workflows.compare import compare, table_study

pytestmark = pytest.mark.browser

#: Per chart: its title, and per trace with a legend entry its name and largest x (as drawn: decoded arrays).
CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => [p._fullLayout.title.text,
    p._fullData.filter(t => t.showlegend !== false).map(t => [t.name, Math.max(...Array.from(t.x || []))])])"""


def prepare(db: Path) -> None:
    """Table studies alpha and beta, each with a saved comparison of RS (2 repetitions, budget 5)."""
    make_tables(db)
    alpha_comparison(db, budget=5)
    with Store(db) as store:
        compare(table_study(store, "beta"), ["RS"], reps=2, budget=5, jobs=1, seed=0, store=store, study="beta")


server = served(prepare)


def open_compare(page, server: str, study: str) -> None:
    page.goto(f"{server}/compare?study={study}")
    wait_ready(page)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label``."""
    box = page.get_by_role("combobox", name=label)
    box.scroll_into_view_if_needed()  # first: a click that scrolls the page closes the list it opens
    box.click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_ready(page)


def peer_form(page):
    """The peer-run form, opened."""
    page.locator("[data-testid='stExpander'] summary", has_text="peer run").click()
    return page.locator("[data-testid='stForm']").filter(has=page.get_by_role("button", name="Import"))


def test_switching_the_table_study_the_name_and_the_peer_space_follow(server, page):
    open_compare(page, server, "alpha")
    choose(page, "Table study", "beta")
    name = page.get_by_role("textbox", name="Name", exact=True)
    assert "alpha" not in name.input_value()  # nothing left of the table chosen before
    assert "beta" in name.input_value() + (name.get_attribute("placeholder") or "")
    space = peer_form(page).get_by_role("textbox", name=re.compile(r"^Space"))
    expect(space).to_have_value("beta")


def test_a_comparison_of_rs_alone_is_named_after_rs_alone(server, page):
    open_compare(page, server, "beta")
    picker = page.locator("[data-testid='stMultiSelect']").filter(has_text="Strategies")
    picker.get_by_role("button", name="Clear all").click()
    picker.locator("input").click()
    page.get_by_role("option", name="RS", exact=True).click()
    page.keyboard.press("Escape")
    page.get_by_label("Repetitions").fill("2")
    page.get_by_label("Budget (measurements)").fill("5")
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Comparison saved").wait_for(timeout=120_000)
    wait_ready(page)
    opened = page.get_by_role("combobox", name="Open")
    expect(opened).to_have_value(re.compile(r"^#\d+ beta: RS \("))  # the strategies that ran, not the form's defaults


def test_a_peer_run_shows_in_the_comparison_at_its_budget(server, page, tmp_path):
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(peer_rows("alpha", length=8)))
    open_compare(page, server, "alpha")
    form = peer_form(page)
    form.get_by_role("textbox", name=re.compile(r"^File")).fill(str(peers))
    form.get_by_role("button", name="Import").click()
    page.get_by_text(re.compile("Peer run (added|imported)")).wait_for()
    wait_ready(page)
    grid_cell(page, "KT pso").wait_for(state="attached")
    assert grid_cell(page, "RS").count() == 1  # one table holds Tunelab's strategy and the peer's
    page.locator(".js-plotly-plot").first.wait_for(state="attached")
    charts = page.evaluate(CHARTS)
    assert len(charts) == 4
    for _, traces in charts:
        assert [name for name, _ in traces] == ["RS", "KT pso"], charts
    curve = next(traces for title, traces in charts if "Best slowdown" in title)
    assert dict(curve)["KT pso"] == 5  # cut at the comparison's budget, not at the peer run's own
