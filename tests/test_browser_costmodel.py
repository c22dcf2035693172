"""The Surrogates page's Cost model section in a real browser, over a database with an evaluation of the cheap
baselines on the real TPU kernels: the baselines table, the predicted-against-measured scatter and a kernel's graph
drawn by plotly."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import grid_cell, served, wait_ready

pytestmark = pytest.mark.browser

#: Per drawn chart: its title and the name of each trace.
CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => ({
    title: (p.layout.title && p.layout.title.text) || '', names: p.data.map(t => t.name)}))"""


def prepare_costmodel(db: Path) -> None:
    """What ``tunelab costmodel evaluate --models heuristic,gbdt,default --seeds 0 --folds 3`` stores."""
    from engine.io.paths import data_dir
    from storage import Store
    from workflows.costmodel import evaluate

    if data_dir() is None:
        pytest.skip("shared data folder is absent")
    with Store(db) as store:
        evaluate(store, "tpu-tiles", ["heuristic", "gbdt", "default"], folds=3, seeds=[0], params={"gbdt": {"max_iter": 20}})


server = served(prepare_costmodel)


def test_cost_model_section_draws_its_table_scatter_and_a_kernel_graph(server, page):
    page.goto(server + "/surrogates?sg_section=Cost+model")
    wait_ready(page)
    for model in ("heuristic", "gbdt", "default"):
        grid_cell(page, model).wait_for(state="attached")
    expect(page.get_by_text("Noise floor: 6 configurations", exact=False)).to_be_visible()
    # the scatter: one trace per kernel, 15 kernels
    page.wait_for_function(f"() => ({CHARTS})().some(c => c.names.length === 15 && c.names.includes('fusion.191'))")
    expander = page.get_by_text("Graph of a kernel", exact=True)
    expander.scroll_into_view_if_needed()
    expander.click()
    wait_ready(page)
    page.wait_for_function(f"() => ({CHARTS})().some(c => / nodes, \\d+ edges/.test(c.title) && c.names.includes('parameter'))")
    charts = page.evaluate(CHARTS)
    picture = next(c for c in charts if " nodes, " in c["title"])
    assert picture["names"][0] == "data flow" and len(picture["names"]) > 2
    assert any("gbdt: top-1 pick" in c["names"] for c in charts)  # the rank plot
