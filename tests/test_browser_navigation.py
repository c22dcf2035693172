"""Issue 17 in chromium: the study lives in the URL (a reload or a link keeps it, Compare does not
switch it), and a positive objective starts from a transform that keeps predictions positive."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser_support import prepare_toy, served, wait_ready
from workflows.demo import TOY_STUDY

pytestmark = pytest.mark.browser
GRID = "Positive grid"


def prepare(db: Path) -> None:
    """The toy study, and a table study of a positive, convex time (1/a² + b/100) with every row measured:
    a straight line through it predicts a negative time at the largest a."""
    import pandas as pd

    from engine.io.table_import import import_table
    from storage import Store

    prepare_toy(db)
    rows = [{"a": a, "b": b, "time": 1.0 / a**2 + b / 100} for a in range(1, 9) for b in range(4)]
    csv = db.with_name("grid.csv")
    pd.DataFrame(rows).to_csv(csv, index=False)
    imported = import_table(csv, objective="time", name=GRID)
    with Store(db) as store:
        study = store.create_study(imported.spec, imported.table)
        for row in rows:
            store.record_measurement(study, {"a": row["a"], "b": row["b"]}, row["time"])


server = served(prepare)


def picked(page, label: str = "Study"):
    return page.get_by_role("combobox", name=label, exact=True)


def test_the_study_is_in_the_url_survives_a_reload_and_compare_does_not_switch_it(server, page):
    page.goto(f"{server}/analyze?study={quote(GRID)}")
    wait_ready(page)
    expect(picked(page)).to_have_value(GRID)
    page.reload()
    wait_ready(page)
    expect(picked(page)).to_have_value(GRID)
    page.goto(f"{server}/design?study={quote(TOY_STUDY)}")
    wait_ready(page)
    expect(picked(page)).to_have_value(TOY_STUDY)
    assert "study=Paper+toy+problem" in page.url or "study=Paper%20toy%20problem" in page.url
    page.get_by_role("link", name="Compare").click()  # the sidebar: same session, a table study there
    wait_ready(page)
    expect(picked(page, "Table study")).not_to_have_value(TOY_STUDY)  # a table study, picked on this page
    page.get_by_role("link", name="Analyze").click()
    wait_ready(page)
    expect(picked(page)).to_have_value(TOY_STUDY)  # before: Compare had switched it to the table study


def test_a_positive_objective_starts_from_box_cox_and_a_negative_prediction_is_flagged(server, page):
    page.goto(f"{server}/analyze?study={quote(GRID)}")
    wait_ready(page)
    transform = picked(page, "Transform of the response")
    expect(transform).to_have_value("boxcox-round")
    caption = page.get_by_text("Predicted best configuration:")
    expect(caption).to_contain_text("predicted time = ")
    assert "predicted time = -" not in caption.inner_text()
    assert page.locator("[data-testid='stAlert']", has_text="≤ 0").count() == 0
    transform.click()
    page.get_by_role("option", name="none", exact=True).click()
    wait_ready(page)
    expect(caption).to_contain_text("predicted time = -")  # the straight line extrapolates below zero
    expect(page.locator("[data-testid='stAlert']", has_text="≤ 0 although every measurement is positive")).to_be_visible()


def test_effects_are_model_based_in_natural_order_and_the_interaction_starts_from_the_strongest_pair(
        server, page, tmp_path):
    from engine.analysis import analyze
    from engine.analysis.effects import strongest_pair
    from engine.analysis.study_data import initial_formula
    from storage import Store
    from workflows import StudySession

    prepare_toy(tmp_path / "same.duckdb")  # the served data, to know which pair the ANOVA ranks first
    with Store(tmp_path / "same.duckdb") as store:
        session = StudySession(store, TOY_STUDY)
        data = session.analysis_data()
        result = analyze(data, initial_formula(session.spec, data), transform="none")
        first, second = strongest_pair(result.model, result.anova)
    page.goto(f"{server}/analyze?study={quote(TOY_STUDY)}")
    wait_ready(page)
    page.get_by_text("Effects", exact=True).click()  # the default view
    wait_ready(page)
    title = page.locator(".js-plotly-plot .gtitle", has_text="Interaction")
    expect(title).to_contain_text(f"{first} × {second}")
    expect(page.locator(".js-plotly-plot .gtitle", has_text="Main effects")).to_contain_text("model-based means")
    axes = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(p => (p.layout.title.text || '').includes('Interaction'))
        .map(p => p.layout.xaxis.categoryarray)""")
    levels = [float(v) for v in axes[0]]
    assert levels == sorted(levels) and len(levels) >= 2


def test_run_shows_a_status_from_the_first_instant_and_fresh_pending_counts_after(server, page):
    page.goto(f"{server}/run?study={quote(TOY_STUDY)}")
    wait_ready(page)
    expect(picked(page, "Design")).to_have_value(re.compile(r", 8 pending$"))
    page.get_by_text("Process pool (parallel, this machine)", exact=True).click()  # a pool takes a moment to start: the silent part before
    wait_ready(page)
    page.get_by_role("button", name="Start measuring").click()
    seen_cancel = False
    for _ in range(600):  # poll the page as it draws: whenever Cancel shows, a status line shows with it
        cancel, status, done = page.evaluate("""() => {
            const text = document.querySelector('[data-testid="stMain"]').innerText;
            return [[...document.querySelectorAll('button')].some(b => b.innerText.trim() === 'Cancel'),
                    /Starting |configurations/.test(text), /Done: /.test(text)]; }""")
        if cancel:
            seen_cancel = True
            assert status, "the run page shows Cancel with no status line"
        if done:
            break
        page.wait_for_timeout(50)
    assert seen_cancel or done
    page.get_by_text("Done: 8 results stored").wait_for(timeout=60_000)
    expect(picked(page, "Design")).to_have_value(re.compile(r", 0 pending$"))
    expect(page.locator(".js-plotly-plot .gtitle", has_text="History").first).to_be_attached()  # best so far


def test_internals_stay_inside_metrics_fit_a_bad_formula_is_said_once_and_tooltips_keep_their_lines(server, page):
    page.goto(f"{server}/analyze?study={quote(GRID)}")
    wait_ready(page)
    metric = page.locator("[data-testid='stMetric']", has_text="Transform").locator("[data-testid='stMetricValue']")
    expect(metric).to_have_text(re.compile(r"^(log|none|λ = -?[\d.e+-]+)$"))  # not "bcPower(lambda=…" cut short
    assert metric.evaluate("e => e.scrollWidth <= e.clientWidth")
    box = page.get_by_role("textbox", name="Formula").first
    box.fill("time ~ a +")
    box.press("Enter")
    wait_ready(page)
    alerts = page.locator("[data-testid='stAlert']")
    expect(alerts.first).to_contain_text("the model below stays the last valid one")
    assert alerts.count() == 1 and "Traceback" not in page.content()
    page.get_by_role("link", name="Compare").click()
    wait_ready(page)
    help_icon = page.locator("[data-testid='stWidgetLabel']", has_text="Strategies").locator(
        "[data-testid='stTooltipHoverTarget']")
    help_icon.hover()
    tooltip = page.locator("[data-testid='stTooltipContent']")
    expect(tooltip).to_be_visible()
    assert tooltip.locator("li").count() >= 5  # one line per strategy, not one run-on paragraph


def test_the_profiler_follows_its_sliders_and_explore_draws_the_optuna_views(server, page):
    page.goto(f"{server}/analyze?study={quote(TOY_STUDY)}")
    wait_ready(page)
    page.get_by_text("Profiler", exact=True).click()
    wait_ready(page)
    title = page.locator(".js-plotly-plot .gtitle", has_text="Prediction profiler")
    expect(title).to_be_visible()
    here = page.locator("[data-testid='stMetric']", has_text="Predicted y here").locator("[data-testid='stMetricValue']")
    before = here.inner_text()
    slider = page.locator("[data-testid='stSlider']").filter(has_not_text="Significance").get_by_role("slider").first
    slider.focus()
    slider.press("End")  # the first factor to its last level, or to its first if it was there
    wait_ready(page)
    if here.inner_text() == before:
        slider.press("Home")
        wait_ready(page)
    expect(here).not_to_have_text(before)
    stars = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(p => (p.layout.title.text || '').includes('profiler'))
        .flatMap(p => p.data.filter(t => t.marker && t.marker.symbol === 'star')).length""")
    assert stars >= 1  # the predicted best is marked
    page.get_by_text("Explore", exact=True).click()
    wait_ready(page)
    for name in ("History", "Importance", "Predicted y over"):
        expect(page.locator(".js-plotly-plot .gtitle", has_text=name).first).to_be_attached()
    parallel = page.locator(".js-plotly-plot .gtitle", has_text="parallel coordinates")
    expect(parallel).to_have_count(0)  # WebGL, drawn on request only
    page.get_by_text("Parallel coordinates of the measured configurations").click()
    wait_ready(page)
    expect(parallel.first).to_be_attached()


def test_study_notes_are_saved_and_go_into_the_report(server, page):
    page.goto(f"{server}/export?study={quote(TOY_STUDY)}")
    wait_ready(page)
    page.get_by_text("Study notes (Markdown; in the report)").click()
    notes = page.get_by_role("textbox", name="Notes")
    notes.fill("## Plan\nx5 first, then the rest")
    page.get_by_role("button", name="Save notes").click()
    page.get_by_text("Notes saved.").wait_for()
    expect(page.get_by_role("heading", name="Plan")).to_be_visible()  # the Markdown preview
    page.reload()
    wait_ready(page)
    expect(page.get_by_role("textbox", name="Notes")).to_have_value("## Plan\nx5 first, then the rest")
    with page.expect_download() as download:
        page.get_by_role("button", name="HTML report").click()
    assert "x5 first, then the rest" in Path(download.value.path()).read_text()
