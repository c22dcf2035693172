"""The paper's worked example (dlmt.md §3): PB screening, then an expert D-optimal model, 24 runs in all."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, anova, coefficient_table, predicted_minimum, propose_decision
from tests.analysis_support import toy_grid

PB_TABLE = """\
x1 x2 x3 x4 x5 x6 x7 x8 d1 d2 d3     Y
 1 -1  1  1  1 -1 -1 -1  1 -1  1 13.74
-1  1 -1  1  1 -1  1  1  1 -1 -1 10.19
-1  1  1 -1  1  1  1 -1 -1 -1  1  9.22
 1  1 -1  1  1  1 -1 -1 -1  1 -1  7.64
 1  1  1 -1 -1 -1  1 -1  1  1 -1  8.63
-1  1  1  1 -1 -1 -1  1 -1  1  1 11.53
-1 -1 -1  1 -1  1  1 -1  1  1  1  2.09
 1  1 -1 -1 -1  1 -1  1  1 -1  1  9.02
 1 -1 -1 -1  1 -1  1  1 -1  1  1 10.68
 1 -1  1  1 -1  1  1  1 -1 -1 -1 11.23
-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1  5.33
-1 -1  1 -1  1  1 -1  1  1  1 -1 14.79
"""

DOPT_TABLE = """\
  x1   x3   x5   x7   x8       Y
-1.0 -1.0 -1.0 -1.0 -1.0   2.455
-1.0  1.0  1.0 -1.0 -1.0   6.992
 1.0 -1.0 -1.0  1.0 -1.0  -7.776
 1.0  1.0  1.0  1.0 -1.0   4.163
 1.0  1.0 -1.0 -1.0  0.0   0.862
-1.0  1.0  1.0 -1.0  0.0   5.703
 1.0 -1.0 -1.0  1.0  0.0  -9.019
-1.0 -1.0  1.0  1.0  0.0   2.653
-1.0 -1.0 -1.0 -1.0  1.0   1.951
 1.0 -1.0  1.0 -1.0  1.0   0.446
-1.0  1.0 -1.0  1.0  1.0  -2.383
 1.0  1.0  1.0  1.0  1.0   4.423
"""

#: The paper's noisy global minimum over the 11^5 grid (§3; also the toy_dopt fixture's global_min_noisy).
GLOBAL_MIN = -9.934
LEVELS = [-1 + 0.2 * i for i in range(11)]


@pytest.fixture(scope="module")
def pb() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(PB_TABLE), sep=r"\s+")


@pytest.fixture(scope="module")
def dopt() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(DOPT_TABLE), sep=r"\s+")


@pytest.fixture(scope="module")
def grid() -> pd.DataFrame:
    return toy_grid(LEVELS)


def test_screening_flags_x3_x5_x7_x8_with_x1_marginal(pb):
    table = anova(LinearModel("Y ~ x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8").fit(pb), 1).set_index("term")
    recomputed = [8.387, 0.367, 80.87, 0.216, 46.94, 5.160, 13.85, 59.74]
    np.testing.assert_allclose(table["F value"].iloc[:8], recomputed, rtol=1e-3)
    p = table["Pr(>F)"]
    assert all(p[t] < 0.05 for t in ("x3", "x5", "x7", "x8"))
    assert 0.05 < p["x1"] < 0.1 and table.loc["x1", "stars"] == "."
    assert all(p[t] > 0.1 for t in ("x2", "x4", "x6"))


def test_screening_decision_fixes_the_significant_factors(pb):
    model = LinearModel("Y ~ x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8").fit(pb)
    corners = pd.DataFrame(np.array(np.meshgrid(*[[-1, 1]] * 8)).reshape(8, -1).T, columns=[f"x{i}" for i in range(1, 9)])
    strict = propose_decision(model, 0.05, candidates=corners, rule="term")  # the paper's rule: any starred term
    assert set(strict.proposed["fix"]) == {"x3", "x5", "x7", "x8"}
    assert strict.proposed["formula"] == "Y ~ x1 + x2 + x4 + x6"
    assert set(propose_decision(model, 0.1, candidates=corners, rule="term").proposed["fix"]) == {"x1", "x3", "x5", "x7", "x8"}


def test_linear_model_on_the_screening_runs_misses_the_optimum(pb, grid):
    best = predicted_minimum(LinearModel("Y ~ x1 + x3 + x5 + x7 + x8").fit(pb), grid)
    assert [best.point[k] for k in ("x1", "x3", "x5", "x7", "x8")] == pytest.approx([-1, -1, -1, 1, -1])


def test_variance_checks_of_section_8(pb, dopt):
    linear = LinearModel("Y ~ x1 + x3 + x5 + x7 + x8").fit(pb)
    assert (linear.ncv_untransformed_.statistic, linear.ncv_untransformed_.p) == pytest.approx((0.5269, 0.4679), abs=1e-4)
    assert (linear.power_.lambda_, linear.power_.se) == pytest.approx((1.0936, 0.2054), abs=1e-4)
    assert linear.power_.lambda_rounded == 1
    expert = LinearModel("Y ~ x1 + x3 + x5 + x7 + x8 + I(x8^2) + x1:x3").fit(dopt)
    assert (expert.ncv_untransformed_.statistic, expert.ncv_untransformed_.p) == pytest.approx((0.2438, 0.6215), abs=1e-4)
    assert expert.power_ is None  # Y has negative values


def test_expert_dopt_model_finds_a_point_within_10_percent_in_24_runs(pb, dopt, grid):
    model = LinearModel("Y ~ x1 + x3 + x5 + x7 + x8 + I(x8^2) + x1:x3").fit(dopt)
    table = anova(model, 1)
    assert list(table["term"]) == ["x1", "x3", "x5", "x7", "x8", "I(x8^2)", "x1:x3", "Residuals"]
    np.testing.assert_allclose(table["F value"].iloc[:7], [462.05, 661.86, 722.04, 294.11, 2.296, 38.22, 398.60], rtol=5e-4)
    assert table["Df"].iloc[-1] == 4
    coefs = coefficient_table(model)["Estimate"]
    np.testing.assert_allclose(coefs, [0.050, -1.452, 1.527, 2.682, -1.712, -0.175, 1.234, 1.879], atol=5e-4)
    best = predicted_minimum(model, grid)
    point = [best.point[k] for k in ("x1", "x3", "x5", "x7", "x8")]
    assert point == pytest.approx([1, -1, -1, 1, 0])  # the noise-free optimum
    assert best.predicted == pytest.approx(-9.20, abs=0.005)
    measured = dopt[(dopt[["x1", "x3", "x5", "x7", "x8"]] == point).all(axis=1)]["Y"].item()
    assert abs(measured - GLOBAL_MIN) / abs(GLOBAL_MIN) < 0.10
    assert len(pb) + len(dopt) == 24
