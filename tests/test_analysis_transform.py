"""Box–Cox, car's rounded λ, the automatic transform rule, ncvTest and Breusch–Pagan."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.diagnostic import het_breuschpagan

from engine.analysis import LinearModel, Transform, breusch_pagan, ncv_test, round_lambda
from tests.analysis_support import r_case


@pytest.mark.parametrize(
    ("lam", "se", "expected"),
    [
        (0.4, 0.5, 1.0),  # both 1 and 0 inside: 1 has priority
        (-0.4, 0.05, -0.33),  # -0.5 just outside [-0.498, -0.302]
        (0.1, 0.01, 0.1),  # nothing inside: keep λ̂
        (-0.55, 0.1, -0.5),
        (1.9, 0.06, 2.0),
    ],
)
def test_round_lambda_follows_cars_priority_list(lam, se, expected):
    assert round_lambda(lam, se) == expected


@pytest.mark.parametrize("lam", [None, 0.0, 0.5, -1.0, 1e-8])
def test_transform_inverts(lam):
    y = np.array([1e-9, 0.3, 1.0, 7.5])
    t = Transform(lam)
    np.testing.assert_allclose(t.inverse(t.apply(y)), y, rtol=1e-9)


def test_bcpower_is_cars_unscaled_form():
    y = np.array([0.5, 2.0, 4.0])
    np.testing.assert_allclose(Transform(0.5).apply(y), (np.sqrt(y) - 1) / 0.5)
    np.testing.assert_allclose(Transform(5e-7).apply(y), np.log(y))  # car's |λ| <= 1e-6 switch
    assert Transform(-0.5).inverse(np.array([5.0]))[0] == np.inf  # λz + 1 <= 0 has no preimage


def test_score_is_the_derivative_of_the_profile():
    case = r_case("laplacian_step1")
    profile = LinearModel(case["formula"]).fit(pd.DataFrame(case["data"])).boxcox_profile()
    for lam in (-1.5, -0.3, 0.0, 2e-5, 0.7):
        h = 1e-6
        numeric = (profile.loglik(lam + h) - profile.loglik(lam - h)) / (2 * h)
        assert profile.score(lam) == pytest.approx(numeric, rel=1e-5, abs=1e-4)


def test_power_transform_without_intercept_uses_cars_transform():
    rng = np.random.default_rng(3)
    x = rng.uniform(1, 3, 40)
    data = pd.DataFrame({"x": x, "Y": (2.0 * x) ** 2 * np.exp(0.05 * rng.standard_normal(40))})
    with_intercept = LinearModel("Y ~ x").fit(data).power_
    without = LinearModel("Y ~ x - 1").fit(data).power_
    assert with_intercept.lambda_ == pytest.approx(0.5, abs=0.1)
    assert np.isfinite(without.lambda_) and without.lambda_ != pytest.approx(with_intercept.lambda_, abs=1e-6)
    profile = LinearModel("Y ~ x - 1").fit(data).boxcox_profile()
    assert profile.score(without.lambda_) == pytest.approx(0.0, abs=1e-6)


def test_auto_rule_transforms_only_when_ncv_rejects():
    lap = r_case("laplacian_step1")  # ncvTest p = 0.02
    data = pd.DataFrame(lap["data"])
    auto = LinearModel(lap["formula"], "auto").fit(data)
    assert auto.transform_.lam == pytest.approx(lap["powerTransform"]["lambda"], abs=1e-6)
    assert LinearModel(lap["formula"], "auto-round").fit(data).transform_.label == "log"
    assert LinearModel(lap["formula"], "auto", ncv_alpha=0.01).fit(data).transform_.label == "none"
    pb = pd.DataFrame(r_case("pb12")["data"])  # ncvTest p = 0.65
    positive = pb.assign(Y=pb["Y"] + 10)
    pb_auto = LinearModel("Y ~ x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8", "auto").fit(positive)
    assert pb_auto.ncv_untransformed_.p > 0.05
    assert pb_auto.transform_.label == "none" and pb_auto.power_ is not None


def test_explicit_lambda_and_log_refit_the_transformed_response():
    lap = r_case("laplacian_step1")
    data = pd.DataFrame(lap["data"])
    model = LinearModel(lap["formula"], -0.5).fit(data)
    np.testing.assert_allclose(model.y_, (data["time_per_pixel"] ** -0.5 - 1) / -0.5)
    assert model.transform_.label == "bcPower(lambda=-0.5)"


def test_ncv_and_breusch_pagan_agree_with_statsmodels():
    case = r_case("unbalanced_cat")
    model = LinearModel(case["formula"].replace("factor(", "C(")).fit(pd.DataFrame(case["data"]))
    resid, X = model.resid_, model.X_
    ncv = ncv_test(resid, model.fitted_)
    lm, lm_p, _, _ = het_breuschpagan(resid, sm.add_constant(model.fitted_), robust=False)
    assert (ncv.statistic, ncv.p) == pytest.approx((lm, lm_p), rel=1e-9)
    for robust in (True, False):
        ours = breusch_pagan(resid, X, studentize=robust)
        lm, lm_p, _, _ = het_breuschpagan(resid, X, robust=robust)
        assert (ours.statistic, ours.p) == pytest.approx((lm, lm_p), rel=1e-9)
        assert ours.df == X.shape[1] - 1


def test_box_cox_with_one_residual_degree_of_freedom_is_refused_in_one_line(tmp_path):
    """Class 8 of issue 12: the residual is one number some λ makes zero, so λ̂ does not exist (R's
    optim fails inside car::powerTransform). Asked for, it is refused; "auto" stays untransformed."""
    from engine.analysis.transform import TransformError
    from tests.conftest import run_cli

    data = pd.DataFrame({"x": [1, 2, 3], "y": [1.2, 2.9, 3.1]})
    for choice in ("boxcox", "boxcox-round"):
        with pytest.raises(TransformError, match="1 residual degree of freedom"):
            LinearModel("y ~ x", choice).fit(data)
    automatic = LinearModel("y ~ x", "auto").fit(data)
    assert automatic.power_ is None and automatic.transform_.label == "none"
    path = tmp_path / "three.csv"
    data.to_csv(path, index=False)
    result = run_cli("analyze", "--csv", str(path), "--formula", "y ~ x", "--transform", "boxcox")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "residual degree of freedom" in result.stderr
