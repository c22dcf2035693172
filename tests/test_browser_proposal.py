"""Issue 30 in chromium, on the toy study as the Design page's defaults leave it (the 12 screening runs and a
50-run D-optimal design for the full cubic model, measured): the proposal's levels are the model's optimum,
the profiler opens there (every curve bottoms out at the star) with the caption's value, the reasons give each
factor's joint test; Export writes that point. (Removing x6 removes the terms that contain it:
test_browser_hierarchy.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_support import predicted_export, served, wait_ready

pytestmark = pytest.mark.browser
#: Per profiler panel (x axis): the curve, the current setting (red) and the star (the predicted best).
PANELS = """() => {
  const plot = [...document.querySelectorAll('.js-plotly-plot')].find(p => (p.layout.title.text || '').includes('profiler'));
  if (!plot) return null;
  const titles = plot.layout.annotations.map(a => a.text);
  return plot._fullData.filter(t => t.mode && t.mode.includes('markers')).map(t => ({
    factor: titles[(t.xaxis === 'x' ? 1 : Number(t.xaxis.slice(1))) - 1], x: Array.from(t.x), y: Array.from(t.y),
    kind: (t.marker || {}).symbol === 'star' ? 'star' : t.mode === 'lines+markers' ? 'curve' : 'current'}));
}"""


def prepare(db: Path) -> None:
    """The demo toy study, then what the Design page builds with its defaults: D-optimal (5 starts, criterion D,
    seed 0) for the full cubic model, 50 runs over its 20,000 candidates, the screening runs kept; measured."""
    from engine.analysis.study_data import candidate_set
    from engine.design import optimal_design
    from engine.model.choice import default_choice, to_formula
    from engine.runners.synthetic import evaluate
    from engine.space.configs import config_keys
    from storage import Store
    from workflows.demo import TOY_STUDY, seed_demo_studies

    with Store(db) as store:
        seed_demo_studies(store)
        study = store.get_study(TOY_STUDY)
        space = study.spec.space
        measured = store.measurements(TOY_STUDY)[space.names].drop_duplicates()
        formula = to_formula(default_choice(space))
        design = optimal_design(candidate_set(study.spec, None, seed=0), formula, 50, repeats=5, seed=0, criterion="D",
                                forced=measured).design[space.names]
        new = design.merge(measured, how="left", indicator=True)
        new = new[new["_merge"] == "left_only"][space.names].reset_index(drop=True)
        design_id = store.save_design(study, new, name="D-optimal (50 runs)", kind="dopt", formula=formula, step=1)
        values = evaluate(study.spec.runner, new, config_keys(space, new))
        for (_, row), value in zip(new.iterrows(), values):
            store.record_measurement(study, row.to_dict(), float(value), design_id=design_id)


server = served(prepare)


def _caption(page) -> tuple[dict[str, str], str]:
    """The predicted best's caption: {factor: level} and the predicted value, as the page prints them."""
    caption = page.get_by_text("Predicted best configuration:")
    expect(caption).to_be_visible()
    text = caption.inner_text()
    levels = dict(re.findall(r"\b(x\d) = (-?[\d.]+)", text.split("(predicted")[0]))
    return levels, re.search(r"predicted y = (\S+?)\)", text).group(1)


def test_the_proposal_the_profiler_and_the_caption_show_the_model_s_optimum(server, page):
    page.goto(server + "/analyze")
    wait_ready(page)
    levels, value = _caption(page)
    assert sorted(levels) == [f"x{i}" for i in range(1, 9)]
    page.get_by_text("Profiler", exact=True).click()
    wait_ready(page)
    here = page.locator("[data-testid='stMetric']", has_text="Predicted y here").locator("[data-testid='stMetricValue']")
    expect(here).to_have_text(value)
    page.wait_for_function(f"() => ({PANELS})() !== null")
    panels = page.evaluate(PANELS)
    for factor, level in levels.items():
        curve, current, star = (next(t for t in panels if t["factor"] == factor and t["kind"] == kind)
                                for kind in ("curve", "current", "star"))
        assert current["x"] == star["x"] == [level], factor  # the profiler opens at the proposal, its star there
        assert min(curve["y"]) == pytest.approx(current["y"][0], rel=1e-12, abs=1e-12), factor  # the curve's bottom
        assert len(curve["x"]) == 11  # every level of the space, not only the measured ones
    assert "Coordinate descent over the levels from" in page.get_by_text("Predicted best configuration:").inner_text()
    reasons = [m.inner_text() for m in page.locator("[data-testid='stMarkdownContainer'] li").all()]
    joint = [r for r in reasons if re.match(r"x\d \(x\d, I\(x\d\^2\), I\(x\d\^3\)\): F = \S+ on 3 and \d+ df, p = \S+, "
                                             r"Holm-adjusted p = \S+ — (fix at|left free)", r)]
    assert len(joint) == 8, reasons
    for reason in joint:  # every fixed factor's level is the caption's, and the fix editor shows it
        factor = reason.split(" ", 1)[0]
        if "— fix at " in reason:
            assert reason.split("— fix at ")[1].split(",")[0] == levels[factor]
            expect(page.get_by_role("combobox", name=f"{factor} level")).to_have_value(levels[factor])


def test_export_writes_the_proposal_s_point_and_value_and_marks_it_a_prediction(server, page):
    """Issue 30 §3: Export's "Predicted by the latest model" wrote another configuration and value than Analyze showed
    (-1.557 against -6.83), into every format, T4 calling it a correct run."""
    page.goto(server + "/analyze")
    wait_ready(page)
    levels, value = _caption(page)
    page.get_by_role("button", name="Accept decision").click()
    page.get_by_text("Decision accepted").wait_for()
    code = predicted_export(page, server)
    exported = json.loads(code.inner_text())
    assert {k: str(v) for k, v in exported["configuration"].items()} == levels
    assert f"{exported['value']:.4g}" == value and exported["prediction"]["measured"] is False
    assert not page.locator("[data-testid='stAlert']", has_text="worse than the best measured").count()
    page.locator("[data-testid='stSelectbox']").filter(has_text="Format").click()
    page.get_by_role("option", name="Kernel Tuner T4 results (JSON)").click()
    wait_ready(page)
    expect(code).to_contain_text('"name": "predicted y"')
    result = json.loads(code.inner_text())["results"][0]
    assert result["correctness"] == 0 and result["times"] == {}
