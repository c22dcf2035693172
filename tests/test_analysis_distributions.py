"""engine.analysis without scipy (issue 31 §4): its own normal and t quantiles, chi-square and F tails and triangular
solves, against scipy (installed for the tests), high-precision mpmath and R's values; the Box-Cox fit's
Newton root against the plain bisection it replaced; and an analysis that imports no scipy at all."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import linalg, special

from engine.analysis import LinearModel
from engine.analysis.fit import solve_upper
from engine.analysis.quantiles import normal_quantile, t_quantile
from engine.analysis.tails import chi_square_sf, log_f_sf, t_p_value
from engine.analysis.transform import BoxCoxProfile, TransformError, power_transform
from tests.analysis_support import r_case

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- normal quantile (AS 241)

NORMAL_P = np.concatenate([
    [1e-300, 1e-200, 1e-100, 1e-20, 1e-10, 1e-5, 0.01, 0.025, 0.0749, 0.075, 0.0751, 0.5, 0.9249, 0.925, 0.975,
     1 - 1e-10, 1 - 1e-15, 1 - 1e-16],
    np.geomspace(1e-300, 0.5, 400), np.linspace(0.001, 0.999, 999), 1 - np.geomspace(1.2e-16, 0.5, 200),
])


def test_normal_quantile_equals_scipys_ndtri_from_1e_300_to_1_minus_1e_16():
    ours, theirs = normal_quantile(NORMAL_P), special.ndtri(NORMAL_P)
    np.testing.assert_allclose(ours, theirs, rtol=2e-15, atol=0)
    assert normal_quantile(0.5) == 0.0


def test_normal_quantile_against_high_precision():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for p in (1e-300, 1e-10, 0.02, 0.3, 0.6, 0.97, 1 - 1e-16):
        tail = mpmath.mpf(p) if p < 0.5 else 1 - mpmath.mpf(p)
        x = mpmath.findroot(lambda v, tail=tail: mpmath.log(mpmath.ncdf(-v)) - mpmath.log(tail), abs(float(special.ndtri(p))))
        exact = float(-x if p < 0.5 else x)
        assert float(normal_quantile(p)) == pytest.approx(exact, rel=1e-15, abs=0), p


def test_normal_quantile_edges_and_shapes():
    out = normal_quantile([0.0, 1.0, -0.1, 1.1, np.nan])
    assert out[0] == -np.inf and out[1] == np.inf and np.isnan(out[2:]).all()
    assert normal_quantile(0.975).shape == () and normal_quantile(np.full((2, 3), 0.3)).shape == (2, 3)
    assert normal_quantile(np.array([])).shape == (0,)


# ---------------------------------------------------------------- t quantile

LEVELS = (0.9, 0.95, 0.975, 0.99, 0.999, 0.9999, 0.99999, 0.999999)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7.5, 10, 30, 100, 1000, 3000, 10_000, 1e5, 1e6, 1e9])
def test_t_quantile_equals_scipys_stdtrit(df):
    for level in LEVELS:
        for p in (0.5 + level / 2, 0.5 - level / 2, level, 1 - level):
            # scipy's own error reaches 4e-13 (df = 4, checked with mpmath); ours is ~1e-15
            assert t_quantile(p, df) == pytest.approx(special.stdtrit(df, p), rel=1e-12, abs=0), (df, p)


@pytest.mark.parametrize("df", [0.5, 1, 2, 3, 5, 7.5, 30, 250, 2000, 1e5])
def test_t_quantile_inverts_the_r_equal_t_tail(df):
    """P(|T| > t) at the quantile is the level's complement, to the tail's own accuracy, also far out."""
    for tail in (0.45, 0.3, 0.25, 0.1, 0.025, 1e-3, 1e-6, 1e-12, 1e-30, 1e-100, 1e-250):
        t = -t_quantile(tail, df)
        if math.isinf(t):
            continue
        assert t_p_value(t, df) == pytest.approx(2 * tail, rel=5e-14), (df, tail)


def test_t_quantile_closed_forms_and_edges():
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-15)
    assert t_quantile(0.975, 2) == pytest.approx(4.302652729749464, rel=1e-15)  # qt(0.975, 2) = 0.95·√(2/0.0975)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959963984540054, rel=1e-15)
    assert t_quantile(0.5, 7) == 0.0 and t_quantile(1.0, 7) == math.inf and t_quantile(0.0, 7) == -math.inf
    assert math.isnan(t_quantile(1.5, 7)) and math.isnan(t_quantile(0.9, 0)) and math.isnan(t_quantile(math.nan, 3))
    assert t_quantile(0.0625, 13) == -t_quantile(0.9375, 13)  # 1 − 0.9375 is exact


def test_t_quantile_against_high_precision():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for df, tail in ((3, 0.025), (30, 0.005), (12, 1e-8), (1000, 0.05), (50_000, 1e-4)):
        D, target = mpmath.mpf(df), mpmath.log(mpmath.mpf(tail))

        def log_tail(v, D=D, target=target):
            t = mpmath.exp(v)
            return mpmath.log(mpmath.betainc(D / 2, mpmath.mpf(1) / 2, 0, D / (D + t * t), regularized=True) / 2) - target

        exact = float(mpmath.exp(mpmath.findroot(log_tail, math.log(-special.stdtrit(df, tail)))))
        assert -t_quantile(tail, df) == pytest.approx(exact, rel=1e-14), (df, tail)


# ---------------------------------------------------------------- chi-square and F tails

CHI_STATISTICS = np.concatenate([[1e-8, 1e-5, 1e-3, 0.1, 0.5], np.linspace(0.7, 100, 40), np.geomspace(100, 2000, 40)])


def test_chi_square_tail_equals_scipys_chdtrc_for_df_1_to_50():
    for df in range(1, 51):
        for statistic in CHI_STATISTICS:
            ours, theirs = chi_square_sf(float(statistic), df), float(special.chdtrc(df, statistic))
            if theirs < 1e-290:  # at the edge of the doubles; R's pchisq underflows there too
                assert ours < 1e-280, (df, statistic)
                continue
            # scipy (Cephes' igamc) is itself up to 1e-13 off near the underflow (see the mpmath test)
            assert ours == pytest.approx(theirs, rel=2e-13, abs=0), (df, statistic)


def test_chi_square_tail_against_high_precision_down_to_1e_300():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for df in (1, 2, 3, 7, 20, 43, 50):
        for statistic in (1e-8, 0.3, 2.3833, 44.46, 150.0, 700.0, 1300.0, 1400.0):
            exact = mpmath.gammainc(mpmath.mpf(df) / 2, mpmath.mpf(statistic) / 2, mpmath.inf, regularized=True)
            if exact < 1e-300:
                continue
            assert chi_square_sf(statistic, df) == pytest.approx(float(exact), rel=5e-15, abs=0), (df, statistic)


def test_chi_square_tail_edges():
    assert chi_square_sf(0.0, 3) == 1.0 and chi_square_sf(-1.0, 3) == 1.0 and chi_square_sf(math.inf, 3) == 0.0
    assert chi_square_sf(5000.0, 1) == 0.0  # as R's pchisq: below the doubles
    assert math.isnan(chi_square_sf(math.nan, 1)) and math.isnan(chi_square_sf(1.0, 0))
    assert chi_square_sf(3.0, 2.5) == pytest.approx(float(special.chdtrc(2.5, 3.0)), rel=1e-14)  # a fractional df


def test_chi_square_tail_equals_r_on_the_laplacian_ncv_test_and_box_cox_lr_tests():
    case = r_case("laplacian_step1")
    ncv = case["ncvTest"]
    assert chi_square_sf(ncv["ChiSquare"], ncv["Df"]) == pytest.approx(ncv["p"], rel=1e-14)
    for test in case["powerTransform"]["lr_tests"]:  # pchisq(LRT, 1, lower.tail = FALSE), printed to 17 digits
        assert chi_square_sf(test["LRT"], test["df"]) == pytest.approx(test["pval"], rel=1e-14)


def test_f_tail_above_the_fractions_region_equals_scipys_fdtrc():
    """Where p is not small the F tail is the complement of the mirrored continued fraction (scipy's fdtrc here
    before): exact to double precision."""
    for df1, df2 in ((1, 1), (1, 5), (3, 20), (8, 500), (40, 200), (200, 3), (1, 100_000)):
        for f in (1e-6, 0.01, 0.3, 0.9, 1.0, 1.5, 3.0):
            theirs = float(special.fdtrc(df1, df2, f))
            assert math.exp(log_f_sf(f, df1, df2)) == pytest.approx(theirs, rel=2e-14), (df1, df2, f)
    for t in (1e-8, 0.1, 0.7, 1.0, 1.5):  # Cauchy's in closed form: scipy's stdtr(1, -1e-8) is 3e-9 off
        assert t_p_value(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-15), t
        for df in (2, 5, 30, 1000):
            assert t_p_value(t, df) == pytest.approx(2 * float(special.stdtr(df, -t)), rel=2e-14), (df, t)


def test_r_t_tails_still_hold():
    rows = json.loads((ROOT / "tests" / "reference" / "r" / "f_tails.json").read_text())["t_tails"]
    for row in rows:
        assert t_p_value(row["t"], row["df"]) == pytest.approx(row["p"], rel=1e-12), row


# ---------------------------------------------------------------- triangular solves


def test_solve_upper_equals_scipys_solve_triangular():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 25))
    R = np.linalg.qr(X)[1]
    for B in (rng.standard_normal(25), rng.standard_normal((25, 40)), np.eye(25)):
        np.testing.assert_allclose(solve_upper(R, B), linalg.solve_triangular(R, B), rtol=1e-12, atol=1e-14)
    x_rows = rng.standard_normal((1000, 25))  # prediction's R⁻ᵀx for every row x, as X·R⁻¹
    ours = x_rows @ solve_upper(R, np.eye(25))
    np.testing.assert_allclose(ours, linalg.solve_triangular(R, x_rows.T, trans="T").T, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- Box-Cox


def _bisected_root(profile: BoxCoxProfile, start: float) -> float:
    """The method power_transform used before: a bisection of the score to 1e-14 from the first sign change."""
    for width in (1e-3, 1e-2, 0.1, 1.0, 4.0):
        lo, hi = start - width, start + width
        if profile.score(lo) > 0 > profile.score(hi):
            while hi - lo > 1e-14 + 4 * np.finfo(float).eps * abs((lo + hi) / 2):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if profile.score(mid) > 0 else (lo, mid)
            return (lo + hi) / 2
    raise AssertionError("no bracket")


def _profiles() -> list[BoxCoxProfile]:
    rng = np.random.default_rng(11)
    x = rng.uniform(1, 4, 200)
    g = rng.integers(0, 3, 200)
    data = pd.DataFrame({"x": x, "g": g, "y": np.exp(0.3 * x + 0.2 * g + 0.1 * rng.standard_normal(200))})
    data["y2"] = (1 + 0.5 * x + 0.05 * rng.standard_normal(200)) ** 2  # λ̂ near 0.5
    data["y3"] = 1e-9 * (5 + x + 0.1 * rng.standard_normal(200))  # seconds: λ̂ near 1, y ≈ 1e-9
    return [LinearModel(formula).fit(data).boxcox_profile()
            for formula in ("y ~ x + C(g)", "y2 ~ x", "y3 ~ x + I(x^2)", "y2 ~ x - 1")]


def test_box_cox_newton_root_equals_the_bisected_score_root_in_a_few_evaluations():
    for profile in _profiles():
        calls = []
        evaluate = profile.evaluate

        def counted(lam, order=2, evaluate=evaluate, calls=calls):
            calls.append(order)
            return evaluate(lam, order)

        profile.evaluate = counted  # type: ignore[method-assign]
        result = power_transform(profile)
        profile.evaluate = evaluate  # type: ignore[method-assign]
        assert result.lambda_ == pytest.approx(_bisected_root(profile, result.lambda_), rel=1e-10, abs=1e-13)
        assert abs(profile.score(result.lambda_)) < 1e-6 * profile.n
        assert result.se == pytest.approx(1 / math.sqrt(profile.curvature(result.lambda_)), rel=1e-12)
        # golden section to 1e-3 (21 likelihoods), a bracket (2 scores), Newton (~5), the tests (2): ~30, was ~135
        assert len(calls) <= 40, len(calls)
        assert sum(order == 2 for order in calls) <= 8, calls


def test_profile_pieces_agree_with_one_another():
    profile = _profiles()[3]  # no intercept: z = gm^(1−λ)·c
    for lam in (-1.2, 0.0, 3e-5, 0.4):
        loglik, score, curvature = profile.evaluate(lam, 2)
        assert (loglik, score, curvature) == (profile.loglik(lam), profile.score(lam), profile.curvature(lam))
        h = 1e-5
        assert score == pytest.approx((profile.loglik(lam + h) - profile.loglik(lam - h)) / (2 * h), rel=1e-6)
        assert curvature == pytest.approx(-(profile.score(lam + h) - profile.score(lam - h)) / (2 * h), rel=1e-6)
        np.testing.assert_allclose(profile.dz(lam), (profile.z(lam + h) - profile.z(lam - h)) / (2 * h), rtol=1e-6)


def test_box_cox_refusals_are_unchanged():
    data = pd.DataFrame({"x": [1, 2, 3], "y": [1.2, 2.9, 3.1]})
    with pytest.raises(TransformError, match="1 residual degree of freedom"):
        power_transform(LinearModel("y ~ x").fit(data).boxcox_profile())


# ---------------------------------------------------------------- no scipy


def test_engine_analysis_source_imports_no_scipy():
    for path in sorted((ROOT / "engine" / "analysis").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(name.split(".")[0] == "scipy" for name in names), f"{path.name} imports {names}"


ANALYSIS_PROBE = """
import sys
import numpy as np, pandas as pd
from engine.analysis import analyze, anova, breusch_pagan, effect_screening, main_effects, predict, qq_data
rng = np.random.default_rng(0)
data = pd.DataFrame({"a": rng.uniform(1, 2, 60), "b": rng.integers(1, 5, 60)})
data["y"] = np.exp(data["a"]) + data["b"] + rng.uniform(0, 0.1, 60)
result = analyze(data, "y ~ a + I(a^2) + b + a:b", transform="boxcox-round", anova_type=2)
model = result.model
anova(model, 3), predict(model, data), qq_data(model), effect_screening(model), main_effects(model)
breusch_pagan(model.resid_, model.X_)
print(",".join(sorted({m for m in sys.modules if m == "scipy" or m.startswith("scipy.")})))
"""


def test_an_analysis_imports_no_scipy_at_all():
    """Issue 31 §4: scipy.special and scipy.linalg alone cost ~0.4-0.5 s of CPU at import, more than a third of R's
    whole report. The fit, Type II/III, Box-Cox, ncvTest, Breusch-Pagan, predictions with intervals, the QQ data and
    the effects import no scipy module."""
    done = subprocess.run([sys.executable, "-c", ANALYSIS_PROBE], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"an analysis imported {done.stdout.strip()}"
