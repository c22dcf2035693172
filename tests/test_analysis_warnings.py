"""Issue 12: what a fit must say that its tables do not (a constant column, aliased terms, no intercept over
columns that span one, a Box-Cox that cannot be estimated), one line each, in the CLI text, the JSON, the
stored model and the report; and the tables built from a fit with a 0-df term stay finite."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, anova, fit_summary
from engine.analysis.effects import effect_summary
from engine.analysis.exploration import importance
from engine.analysis.summary import analyze

RNG = np.random.default_rng(3)
DATA = pd.DataFrame({"x1": RNG.uniform(1, 5, 16).round(2), "x2": RNG.uniform(1, 5, 16).round(2), "k": 4.0,
                     "f": ["a", "b", "c", "d"] * 4})
DATA["y"] = (2 + DATA.x1 + 0.5 * DATA.x2 + RNG.normal(size=16) * 0.3).round(3)


def test_a_constant_column_and_the_aliased_terms_are_named():
    model = LinearModel("y ~ x1 + x2 + k + I(x1 + x2)").fit(DATA)
    assert model.warnings_ == (
        "column 'k' is constant (4 in every row): its terms cannot be estimated apart from the intercept",
        "aliased (not estimable): k, I(x1 + x2): each is a combination of the columns before it; Type II gives "
        "such terms 0 df, Type III is refused",
    )
    assert fit_summary(model).warnings == model.warnings_


def test_a_fit_without_warnings_has_none():
    assert LinearModel("y ~ x1 + x2").fit(DATA).warnings_ == ()
    assert LinearModel("y ~ x1 + x2 - 1").fit(DATA).warnings_ == ()  # no intercept, and no constant in the span


def test_no_intercept_over_columns_that_span_a_constant_is_said():
    model = LinearModel("y ~ f + x1 - 1").fit(DATA)
    assert [line for line in model.warnings_ if line.startswith("no intercept in the formula, yet its columns span")]


@pytest.mark.parametrize(("data", "expected"), [
    (DATA.head(3), "Box-Cox: 1 residual degree of freedom"),
    (DATA.assign(y=DATA["y"] - 5), "Box-Cox: not available, the response 'y' has values <= 0"),
])
def test_a_box_cox_that_cannot_be_estimated_says_why(data, expected):
    model = LinearModel("y ~ x1").fit(data)
    assert model.power_ is None
    assert [line for line in model.warnings_ if line.startswith(expected)]
    assert f"Warning: {expected}" in analyze(data, "y ~ x1").to_text()


def test_tables_over_a_term_with_no_df_stay_finite():
    model = LinearModel("y ~ x1 + k + x2").fit(DATA)
    table = anova(model, 2)
    assert table.set_index("term").loc["k", "Df"] == 0
    summary = effect_summary(model, table).set_index("term")
    assert np.isnan(summary.loc["k", "LogWorth"]) and summary.index[-1] == "k"
    shares = importance(model, table)
    assert np.isfinite(shares["share"]).all() and shares["share"].sum() == pytest.approx(1.0)


def test_the_warnings_are_stored_with_the_model_and_shown_in_the_report(db_path):
    from storage import Store
    from workflows.demo import TOY_STUDY, seed_demo_studies
    from workflows.reporting import report_html

    result = analyze(DATA, "y ~ x1 + x2 + k")
    with Store(db_path) as store:
        seed_demo_studies(store)
        store.save_model(store.get_study(TOY_STUDY), formula=result.model.formula, transform="none",
                         coefficients=result.coefficients, anova=result.anova, summary=result.summary.to_dict())
        html = report_html(store, TOY_STUDY)
    assert html.count('<p class="warning">Warning: ') == 2
    assert "Warning: column &#x27;k&#x27; is constant (4 in every row)" in html
