"""Diagnostics, effects and effect screening as data, and the plotly figures drawn from that data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.outliers_influence import OLSInfluence

from engine.analysis import (
    LinearModel,
    effect_screening,
    interaction_effects,
    main_effects,
    plots,
    qq_data,
    residual_diagnostics,
)
from engine.analysis.anova_tables import anova
from engine.analysis.diagnostics import ppoints
from engine.analysis.effects import strongest_pair
from tests.analysis_support import r_case


@pytest.fixture(scope="module")
def pb():
    case = r_case("pb12")
    data = pd.DataFrame(case["data"])
    return data, LinearModel(case["formula"]).fit(data)


@pytest.fixture(scope="module")
def unbalanced():
    case = r_case("unbalanced_cat")
    data = pd.DataFrame(case["data"])
    return LinearModel(case["formula"].replace("factor(", "C(")).fit(data)


def test_residual_diagnostics_match_statsmodels_influence(unbalanced):
    diag = residual_diagnostics(unbalanced)
    influence = OLSInfluence(OLS(unbalanced.y_, unbalanced.X_).fit())  # statsmodels' own fit of the same columns
    np.testing.assert_allclose(diag["leverage"], influence.hat_matrix_diag, rtol=1e-10)
    np.testing.assert_allclose(diag["std_residual"], influence.resid_studentized_internal, rtol=1e-9)
    np.testing.assert_allclose(diag["cooks_distance"], influence.cooks_distance[0], rtol=1e-9)
    np.testing.assert_allclose(diag["residual"] + diag["fitted"], unbalanced.y_, rtol=1e-12)
    assert list(diag["row"]) == list(unbalanced.data_.index)


def test_qq_uses_rs_plotting_positions(pb, unbalanced):
    np.testing.assert_allclose(ppoints(5), (np.arange(1, 6) - 3 / 8) / (5 + 1 - 3 / 4))
    np.testing.assert_allclose(ppoints(60), (np.arange(1, 61) - 0.5) / 60)
    qq = qq_data(unbalanced)
    assert np.all(np.diff(qq["theoretical"]) > 0) and np.all(np.diff(qq["sample"]) >= 0)
    assert qq["theoretical"].iloc[0] == pytest.approx(-qq["theoretical"].iloc[-1])


def test_model_based_means_equal_observed_means_on_a_balanced_design_and_keep_counts(pb, unbalanced):
    data, model = pb
    effects = main_effects(model)
    assert set(effects["factor"]) == {f"x{i}" for i in range(1, 9)}
    x3 = effects[effects["factor"] == "x3"].set_index("level")
    # an orthogonal ±1 design and an additive model: the least-squares mean is the observed mean
    assert x3.loc[1, "predicted"] == pytest.approx(data.loc[data["x3"] == 1, "Y"].mean())
    assert (x3["lower"] < x3["predicted"]).all() and (x3["predicted"] < x3["upper"]).all()
    assert list(x3["n"]) == [6, 6]
    cells = interaction_effects(unbalanced, "vector_length", "load_overlap")
    case = r_case("unbalanced_cat")
    counts = {(c["vector_length"], False): c["n_false"] for c in case["cell_counts"]}
    counts |= {(c["vector_length"], True): c["n_true"] for c in case["cell_counts"]}
    assert {(r.level_a, r.level_b): r.n for r in cells.itertuples()} == counts


def test_on_an_unbalanced_design_means_average_the_model_not_the_rows():
    """a's effect is 2 per unit, c's 3; c = 'v' mostly where a is large. Raw means of c mix in a's
    effect; least-squares means hold a at its mean, so they differ by c's effect alone."""
    a = np.array([1, 1, 1, 1, 2, 2, 2, 16, 16, 16, 16, 16])
    c = np.array(["u", "u", "u", "u", "u", "u", "v", "v", "v", "v", "v", "u"])
    y = 2.0 * a + 3.0 * (c == "v") + np.array([0.1, -0.1, 0.05, -0.05, 0.1, -0.1, 0.0, 0.1, -0.1, 0.05, -0.05, 0.0])
    model = LinearModel("y ~ a + c").fit(pd.DataFrame({"a": a, "c": c, "y": y}))
    means = main_effects(model).set_index(["factor", "level"])["predicted"]
    assert means["c", "v"] - means["c", "u"] == pytest.approx(3.0, abs=0.2)
    assert y[c == "v"].mean() - y[c == "u"].mean() > 15  # what the raw means would have shown
    assert means["a", 16] - means["a", 1] == pytest.approx(30.0, abs=0.3)
    assert list(main_effects(model, ["a"])["level"]) == [1, 2, 16]  # numeric order, not "1", "16", "2"
    assert list(interaction_effects(model, "a", "c")["level_a"]) == [1, 1, 2, 2, 16, 16]


def test_the_interaction_plot_starts_from_the_most_significant_pair():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.choice([1, 2, 4], 48), "b": rng.choice([1, 2], 48), "d": rng.choice([1, 2], 48)})
    frame["y"] = frame["a"] + 0.1 * frame["b"] + 4.0 * frame["b"] * frame["d"] + rng.normal(0, 0.1, 48)
    model = LinearModel("y ~ a + b + d + a:b + b:d").fit(frame)
    assert strongest_pair(model, anova(model, 1)) == ("b", "d")
    additive = LinearModel("y ~ a + b + d").fit(frame)
    assert set(strongest_pair(additive, anova(additive, 1))) == {"b", "d"}
    assert strongest_pair(LinearModel("y ~ a").fit(frame), anova(additive, 1)) is None


def test_effect_screening_ranks_scaled_estimates(pb):
    _, model = pb
    screen = effect_screening(model)
    assert "(Intercept)" not in set(screen["term"]) and len(screen) == 8
    # ±1 coding: half the range is 1, so the scaled estimate is the coefficient itself.
    np.testing.assert_allclose(screen["scaled_estimate"], screen["estimate"])
    magnitude = screen["scaled_estimate"].abs().to_numpy()
    assert np.all(np.diff(magnitude) <= 0)
    assert np.all(np.diff(screen["half_normal_quantile"].to_numpy()) < 0)
    r_coefs = [c for c in r_case("pb12")["coefficients"] if c["term"] != "(Intercept)"]
    assert list(screen["term"]) == [c["term"] for c in sorted(r_coefs, key=lambda c: -abs(c["Estimate"]))]


def test_figures_are_drawn_from_the_data(pb, unbalanced):
    data, model = pb
    diag = residual_diagnostics(model)
    figures = {
        "residuals": plots.residuals_figure(diag),
        "qq": plots.qq_figure(qq_data(model)),
        "leverage": plots.leverage_figure(diag),
        "cooks": plots.cooks_figure(diag),
        "main": plots.main_effects_figure(main_effects(model, ["x1", "x3"])),
        "interaction": plots.interaction_figure(interaction_effects(model, "x1", "x3")),
        "half_normal": plots.half_normal_figure(effect_screening(model)),
    }
    assert all(isinstance(f, go.Figure) for f in figures.values())
    np.testing.assert_allclose(figures["residuals"].data[0].y, diag["residual"])
    assert len(figures["main"].data) == 2 and len(figures["interaction"].data) == 2
    lap = r_case("laplacian_step1")
    lap_model = LinearModel(lap["formula"]).fit(pd.DataFrame(lap["data"]))
    curve = lap_model.boxcox_profile().curve(np.linspace(-2, 2, 41))
    figure = plots.boxcox_figure(curve, lap_model.power_)
    assert curve["loglik"].idxmax() == np.argmin(np.abs(curve["lambda"] - lap_model.power_.lambda_))
    np.testing.assert_allclose(figure.data[0].y, curve["loglik"])


def test_the_effect_summary_ranks_terms_by_logworth_and_pruning_keeps_the_rest(pb):
    from engine.analysis.effects import effect_summary, formula_without

    _, model = pb
    table = anova(model, 1)
    summary = effect_summary(model, table)
    assert sorted(summary["term"]) == sorted(t.display for t in model.terms_)
    assert np.all(np.diff(summary["LogWorth"].to_numpy()) <= 0)
    p = table.set_index("term")["Pr(>F)"]
    np.testing.assert_allclose(summary["LogWorth"], -np.log10(p[summary["term"]].to_numpy()))
    weakest = summary["term"].iloc[-1]
    pruned = LinearModel(formula_without(model, [weakest])).fit(model.data_.assign(Y=model.y_raw_))
    assert [t.display for t in pruned.terms_] == [t.display for t in model.terms_ if t.display != weakest]


def test_the_profiler_importance_and_surface_follow_the_model():
    from engine.analysis.exploration import importance, profile, surface

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.choice([1, 2, 16], 60), "b": rng.choice([1, 2], 60), "c": rng.choice(["p", "q"], 60)})
    frame["y"] = 3.0 * frame["a"] + 0.5 * frame["b"] + rng.normal(0, 0.2, 60)
    model = LinearModel("y ~ a + b + c").fit(frame)
    at = {"a": 2, "b": 1, "c": "q"}
    panels = profile(model, at)
    assert list(panels.loc[panels["factor"] == "a", "level"]) == [1, 2, 16]
    here = panels[panels["current"]]
    assert len(here) == 3 and here["predicted"].nunique() == 1  # every panel crosses at the current setting
    assert (panels["lower"] < panels["predicted"]).all() and (panels["predicted"] < panels["upper"]).all()
    a16 = panels[(panels["factor"] == "a") & (panels["level"] == 16)]["predicted"].iloc[0]
    assert a16 - here["predicted"].iloc[0] == pytest.approx(42.0, abs=0.5)  # 3 per unit of a, 14 units
    shares = importance(model, anova(model, 1))
    assert shares["factor"].iloc[0] == "a" and shares["share"].sum() == pytest.approx(1.0)
    grid = surface(model, "a", "b", at)
    assert len(grid) == 6 and grid.loc[(grid["a"] == 16) & (grid["b"] == 2), "predicted"].iloc[0] > 40


def test_the_fit_s_least_squares_equal_statsmodels_ols(unbalanced):
    """The fit's own least squares (one QR, no second factorisation) against statsmodels' OLS on the same columns."""
    theirs = OLS(unbalanced.y_, unbalanced.X_).fit()
    ours = unbalanced.results_
    np.testing.assert_allclose(ours.params, theirs.params, rtol=1e-9)
    np.testing.assert_allclose(ours.fittedvalues, theirs.fittedvalues, rtol=1e-10)
    np.testing.assert_allclose(ours.resid, theirs.resid, rtol=1e-8, atol=1e-12 * np.abs(unbalanced.y_).max())
    assert ours.ssr == pytest.approx(theirs.ssr, rel=1e-10) and ours.llf == pytest.approx(theirs.llf, rel=1e-12)


def test_main_effects_from_one_batched_matrix_equal_one_matrix_per_factor(unbalanced):
    """The batched least-squares means (one model-matrix build for every factor) against the per-factor path."""
    from engine.analysis.effects import _model_means

    batched = main_effects(unbalanced)
    for factor, part in batched.groupby("factor", sort=False):
        alone = _model_means(unbalanced, pd.DataFrame({factor: list(part["level"])}), 0.95)
        np.testing.assert_allclose(part[["predicted", "lower", "upper"]].to_numpy(dtype=float),
                                   alone.to_numpy(dtype=float), rtol=1e-12)
