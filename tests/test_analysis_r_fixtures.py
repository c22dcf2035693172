"""Equivalence with R (4.2.2, car 3.1.1) on every statistics case of shared/reference/r_stats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, anova, coefficient_table, fit_summary, predict, predicted_minimum
from tests.analysis_support import ANOVA, CAR, COEF, RTOL, assert_stars, assert_table, laplacian_space, r_case, r_name, toy_grid


def _fit_matches(model: LinearModel, fit: dict) -> None:
    s = fit_summary(model)
    assert (s.df_residual, s.rank, s.f_numdf, s.f_dendf) == (fit["df_residual"], fit["rank"], fit["fstatistic"]["numdf"], fit["fstatistic"]["dendf"])
    got = [s.sigma, s.r_squared, s.adj_r_squared, s.f_value]
    want = [fit["sigma"], fit["r_squared"], fit["adj_r_squared"], fit["fstatistic"]["value"]]
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert list(s.aliased) == fit["aliased"]


# ---------------------------------------------------------------- pb12


def test_pb12_type1_anova_coefficients_and_fit():
    case = r_case("pb12")
    data = pd.DataFrame(case["data"])
    model = LinearModel(case["formula"]).fit(data)
    table = anova(model, 1)
    assert_table(table, case["anova"], ANOVA)
    assert_stars(table, case["anova"])
    coefs = coefficient_table(model)
    assert_table(coefs, case["coefficients"], COEF)
    assert_stars(coefs, case["coefficients"])
    _fit_matches(model, case["fit"])


def test_pb12_orthogonal_design_makes_all_anova_types_agree():
    case = r_case("pb12")
    model = LinearModel(case["formula"]).fit(pd.DataFrame(case["data"]))
    t1, t2, t3 = (anova(model, t) for t in (1, 2, 3))
    np.testing.assert_allclose(t2["F value"].to_numpy()[:-1], t1["F value"].to_numpy()[:-1], rtol=1e-10)
    assert t3["term"].iloc[0] == "(Intercept)"
    np.testing.assert_allclose(t3["F value"].to_numpy()[1:-1], t1["F value"].to_numpy()[:-1], rtol=1e-10)


# ---------------------------------------------------------------- toy_dopt


def test_toy_dopt_fit_anova_and_predicted_argmin_over_the_11_to_the_5_grid():
    case = r_case("toy_dopt")
    model = LinearModel(case["fit_formula"]).fit(pd.DataFrame(case["design"]))
    assert_table(anova(model, 1), case["anova"], ANOVA)
    assert_table(coefficient_table(model), case["coefficients"], COEF)
    _fit_matches(model, case["fit"])
    grid = toy_grid(case["candidates"]["levels"])
    assert len(grid) == case["candidates"]["n_rows"]
    best = predicted_minimum(model, grid)
    ref = case["predicted_argmin"]
    assert best.position == ref["row"]
    assert len(best.ties) == ref["n_rows_at_min"]
    assert best.predicted == pytest.approx(ref["predicted_Y"], rel=RTOL)
    assert {k: best.point[k] for k in ref["x"]} == pytest.approx(ref["x"])
    fits = np.sort(predict(model, grid)["fit"].to_numpy())
    assert fits[1] - fits[0] == pytest.approx(ref["gap_to_second_lowest_prediction"], rel=1e-6)


# ---------------------------------------------------------------- laplacian_step1


@pytest.fixture(scope="module")
def lap():
    case = r_case("laplacian_step1")
    data = pd.DataFrame(case["data"])
    return case, data, LinearModel(case["formula"]).fit(data)


def test_laplacian_type1_and_coefficients_on_raw_seconds(lap):
    case, _, model = lap
    assert_table(anova(model, 1), case["anova_type1"], ANOVA)
    assert_stars(anova(model, 1), case["anova_type1"])
    assert_table(coefficient_table(model), case["coefficients"], COEF)
    _fit_matches(model, case["fit"])


def test_laplacian_type2_and_type3_on_raw_seconds_and_nanoseconds(lap):
    case, data, model = lap
    assert_table(anova(model, 2), case["anova_type2"]["raw"]["table"], CAR)
    ns = LinearModel(case["formula"]).fit(data.assign(time_per_pixel=data["time_per_pixel"] * 1e9))
    assert_table(anova(ns, 2), case["anova_type2"]["ns"]["table"], CAR)
    assert_stars(anova(ns, 2), case["anova_type2"]["ns"]["table"])
    assert_table(anova(ns, 3), case["anova_type3"]["ns"]["table"], CAR)
    assert_stars(anova(ns, 3), case["anova_type3"]["ns"]["table"])
    drop1 = [r for r in case["anova_type3"]["raw"]["table"] if r["term"] != "<none>"]
    ours = anova(model, 3)
    ours = ours[~ours["term"].isin(["(Intercept)", "Residuals"])]
    assert_table(ours, drop1, {"Df": "Df", "Sum Sq": "Sum of Sq", "F value": "F value", "Pr(>F)": "Pr(>F)"})


def test_laplacian_type3_intercept_F_is_the_squared_sum_coded_t(lap):
    case, data, _ = lap
    ns = LinearModel(case["formula"]).fit(data.assign(time_per_pixel=data["time_per_pixel"] * 1e9))
    t = case["anova_type3"]["coefficients_sum_contrasts"][0]["t value"]
    assert anova(ns, 3)["F value"].iloc[0] == pytest.approx(t**2, rel=RTOL)


def test_laplacian_power_transform_matches_car(lap):
    case, _, model = lap
    ref, power = case["powerTransform"], model.power_
    assert power.lambda_ == pytest.approx(ref["lambda"], abs=1e-6)
    # Root of the exact score; R's optimize(tol = 1e-12) is itself limited by the flat objective (~1e-8).
    assert power.lambda_ == pytest.approx(ref["lambda_precise"], abs=3e-8)
    assert power.se == pytest.approx(ref["se"], rel=1e-3)
    assert power.se == pytest.approx(ref["se_precise"], rel=1e-5)
    assert power.lambda_rounded == ref["lambda_rounded"] == 0
    assert (power.wald_lower, power.wald_upper) == pytest.approx((ref["wald_lower"], ref["wald_upper"]), rel=1e-3)
    assert -power.loglik == pytest.approx(ref["objective_at_lambda_precise"], rel=1e-13)
    (l0, lrt0, p0), (l1, lrt1, p1) = power.lr_tests
    t0, t1 = ref["lr_tests"]
    assert (l0, l1) == (t0["lambda"], t1["lambda"])
    assert lrt0 == pytest.approx(t0["LRT"], rel=1e-9) and p0 == pytest.approx(t0["pval"], rel=1e-9)
    # car's LRT at λ = 1 suffers the y^λ − 1 cancellation (README: 86.1867542 vs 86.1867540 stably).
    assert lrt1 == pytest.approx(t1["LRT"], rel=1e-8) and p1 == pytest.approx(t1["pval"], rel=1e-6)


def test_laplacian_rounded_boxcox_refit_is_the_log_fit(lap):
    case, data, _ = lap
    model = LinearModel(case["formula"], transform="boxcox-round").fit(data)
    assert model.transform_.label == "log"
    ref = case["boxcox_fit"]
    assert_table(anova(model, 1), ref["anova_type1"], ANOVA)
    assert_table(coefficient_table(model), ref["coefficients"], COEF)
    _fit_matches(model, ref["fit"])


def test_laplacian_ncv_test(lap):
    case, _, model = lap
    ref, ncv = case["ncvTest"], model.ncv_untransformed_
    assert (ncv.statistic, ncv.p) == pytest.approx((ref["ChiSquare"], ref["p"]), rel=RTOL)
    assert ncv.df == ref["Df"] and ncv.test == ref["test"]


def test_laplacian_prediction_over_the_whole_search_space(lap):
    case, _, model = lap
    space = laplacian_space()
    ref = case["prediction_all_rows"]
    assert len(space) == case["input"]["n_rows"]
    pred = predict(model, space)
    np.testing.assert_allclose(pred["fit"].to_numpy()[:10], ref["first10_predicted"], rtol=RTOL)
    lowest = np.argsort(pred["fit"].to_numpy(), kind="stable")[:5]
    assert lowest.tolist() == [r["row"] for r in ref["lowest5"]]
    np.testing.assert_allclose(pred["fit"].to_numpy()[lowest], [r["predicted"] for r in ref["lowest5"]], rtol=RTOL)
    best = predicted_minimum(model, space)
    assert best.position == ref["argmin_row"] and len(best.ties) == ref["n_rows_at_min"]
    assert best.predicted == pytest.approx(ref["argmin_predicted"], rel=RTOL)
    assert {k: best.point[k] for k in ref["argmin_config"] if k != "row"} == {
        k: v for k, v in ref["argmin_config"].items() if k != "row"
    }


# ---------------------------------------------------------------- unbalanced_cat


@pytest.fixture(scope="module")
def unbalanced():
    case = r_case("unbalanced_cat")
    data = pd.DataFrame(case["data"])
    formula = r_name(case["formula"])
    return case, data, formula, LinearModel(formula).fit(data)


def test_unbalanced_types_I_II_III_differ_and_match_r(unbalanced):
    case, data, formula, model = unbalanced
    assert_table(anova(model, 1), case["anova_type1"], ANOVA)
    assert_table(anova(model, 2), case["anova_type2"]["raw"]["table"], CAR)
    ns = LinearModel(formula).fit(data.assign(time_per_pixel=data["time_per_pixel"] * 1e9))
    assert_table(anova(ns, 2), case["anova_type2"]["ns"]["table"], CAR)
    assert_table(anova(ns, 3), case["anova_type3"]["ns"]["table"], CAR)
    assert_stars(anova(ns, 3), case["anova_type3"]["ns"]["table"])
    f1, f2, f3 = (anova(ns, t).set_index("term")["F value"]["C(vector_length)"] for t in (1, 2, 3))
    assert len({round(f1, 6), round(f2, 6), round(f3, 6)}) == 3


def test_unbalanced_coefficients_r2_loglik_aic_bic(unbalanced):
    case, _, _, model = unbalanced
    assert_table(coefficient_table(model), case["coefficients"], COEF)
    s = fit_summary(model)
    got = [s.r_squared, s.adj_r_squared, s.sigma, s.loglik, s.aic, s.bic]
    want = [case[k] for k in ("r_squared", "adj_r_squared", "sigma", "logLik", "AIC", "BIC")]
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert s.rank + 1 == case["logLik_df"] and s.df_residual == case["df_residual"]
    _fit_matches(model, case["fit"])


# ---------------------------------------------------------------- boxcox_marginal


def test_boxcox_profile_loglik_is_the_stable_value_at_every_lambda():
    case = r_case("boxcox_marginal")
    model = LinearModel(case["formula"]).fit(pd.DataFrame(case["data"]))
    profile = model.boxcox_profile()
    assert profile.gm == pytest.approx(case["geometric_mean_y"], rel=1e-13)
    for row in case["profile"]:
        ours = profile.loglik(row["lambda"])
        assert ours == pytest.approx(row["loglik_stable"], rel=1e-11), row["lambda"]
        if row["lambda"] <= 0.5:  # car's own value cancels catastrophically above (README, case 6)
            assert ours == pytest.approx(row["loglik_car"], rel=1e-10), row["lambda"]
        lr = 2 * (model.power_.loglik - ours)
        assert lr == pytest.approx(row["lr_vs_optimum_stable"], rel=1e-9, abs=1e-8)
    mass = [profile.loglik(v) + case["mass_boxcox"]["expected_offset"] for v in (r["lambda"] for r in case["profile"])]
    np.testing.assert_allclose(mass, case["mass_boxcox"]["loglik"], rtol=1e-11)
    assert model.power_.lambda_ == pytest.approx(case["lambda_precise"], abs=3e-8)
    assert model.power_.loglik == pytest.approx(case["loglik_stable_at_lambda_precise"], rel=1e-13)
