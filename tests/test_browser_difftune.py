"""The Surrogates page's DiffTune learning section in a real browser, over a database with a tiny data set, surrogate
and cross-arch experiment: its tables, a drawn heatmap of what a learnt table changed, and both downloads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from playwright.sync_api import expect

from tests.browser_support import grid_cell, served, wait_ready

pytestmark = pytest.mark.browser

#: Per chart on the page, the type of each trace and how many rows a heatmap has.
TRACES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.data.map(t => [t.type, (t.y || []).length]))"""


def prepare_difftune(db: Path) -> None:
    """What ``tunelab difftune dataset``, ``train`` and ``experiment cross-arch`` make, at toy sizes."""
    from engine.io.paths import data_dir
    from engine.surrogates.difftune.train import TrainConfig
    from storage import Store
    from workflows.difftune.dataset import simulate_dataset
    from workflows.difftune.experiments import run
    from workflows.difftune.surrogate import train_surrogate

    if data_dir() is None:
        pytest.skip("shared data folder is absent")
    with Store(db) as store:
        simulate_dataset(store, arch="haswell", samples=800, limit=40, chunk=400, name="tiny")
        train_surrogate(store, dataset_name="tiny", name="s", epochs=1,
                        config=TrainConfig(embedding=16, hidden=16, layers=1, batch=64))
        run(store, "cross-arch", "s", budget=300, learn_epochs=2)


server = served(prepare_difftune)


def test_learning_section_shows_its_tables_a_heatmap_and_downloads_the_learnt_table(server, page):
    page.goto(server + "/surrogates?sg_section=DiffTune+learning")
    wait_ready(page)
    grid_cell(page, "tiny").wait_for(state="attached")  # the data set, then the baselines of the experiment
    grid_cell(page, "DiffTune (defaults start)").wait_for(state="attached")
    learnt = page.get_by_role("combobox", name="Learnt table")
    learnt.scroll_into_view_if_needed()  # first: a click that scrolls the page closes the list it opens
    learnt.click()
    page.get_by_role("option", name="DiffTune (random start)").click()
    wait_ready(page)
    page.get_by_text("the data set's defaults", exact=True).click()  # a random table differs from them everywhere
    wait_ready(page)
    expect(page.get_by_text("DiffTune (random start) against the data set's defaults")).to_be_visible()
    page.wait_for_function(f"() => ({TRACES})().some(c => c.some(([type, rows]) => type === 'heatmap' && rows > 0))")

    with page.expect_download() as download:
        page.get_by_role("button", name="Learnt table (JSON)").click()
    document = json.loads(Path(download.value.path()).read_text())
    assert document["rows"] and document["dispatch_width"] >= 1
    with page.expect_download() as download:
        page.get_by_role("button", name="Learnt table (DiffTune key-value .txt)").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert lines[0].startswith("# tunelab parameter table") and lines[1].startswith("DispatchWidth ")


def test_an_evaluation_of_the_held_out_blocks_only_is_run_and_labelled_so(server, page):
    """The simulator section's evaluation form: ticking the held-out box scores the test part alone (a hash of each
    block, engine/surrogates/difftune/split.py), and the stored evaluation says so."""
    page.goto(server + "/surrogates")
    wait_ready(page)
    page.get_by_role("checkbox", name="Held-out blocks only").check(force=True)
    blocks = page.get_by_role("spinbutton", name="Blocks (0: all)")
    blocks.fill("300")
    page.get_by_role("button", name="Evaluate").click()
    wait_ready(page)
    chosen = page.get_by_role("combobox", name="Evaluation")
    expect(chosen).to_have_value(re.compile(r"held-out blocks$"))  # the new evaluation is the one shown
    count = re.search(r"(\d+) held-out blocks", chosen.input_value())
    assert count and 0 < int(count.group(1)) <= 300 and "Traceback" not in page.content()
