"""Bad input gives one clear line naming the field and value; missing measurements are excluded and counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, analyze, anova, coefficient_table, mean_of_repeats, predict
from engine.errors import UserError


@pytest.fixture
def data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(-1, 1, 20), rng.uniform(-1, 1, 20)
    return pd.DataFrame({"x1": x1, "x2": x2, "Y": 3 + x1 - 2 * x2 + 0.1 * rng.standard_normal(20)})


def _one_line_error(fn, pattern: str) -> str:
    with pytest.raises(ValueError, match=pattern) as info:
        fn()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_factor_is_named(data):
    _one_line_error(lambda: LinearModel("Y ~ x1 + x9").fit(data), "unknown name 'x9'")
    _one_line_error(lambda: LinearModel("Z ~ x1").fit(data), "unknown name 'Z'")


def test_too_few_rows_says_how_many_are_needed(data):
    message = _one_line_error(lambda: LinearModel("Y ~ x1 * x2 + I(x1^2)").fit(data.head(5)), "at least 6 rows")
    assert "5 coefficients" in message and "got 5" in message


def test_constant_response_is_refused(data):
    _one_line_error(lambda: LinearModel("Y ~ x1").fit(data.assign(Y=2.5)), "response 'Y' is constant")


def test_boxcox_and_log_need_positive_responses(data):
    negative = data.assign(Y=data["Y"] - 10)
    for transform in ("boxcox", "boxcox-round", "log", 0.5):
        _one_line_error(lambda t=transform: LinearModel("Y ~ x1", t).fit(negative), "needs positive values; 20 of 20 rows")
    # Without a transform, or with the automatic rule, a negative response is fine (no lambda is reported).
    assert LinearModel("Y ~ x1", "auto").fit(negative).power_ is None


def test_bad_options_are_refused(data):
    _one_line_error(lambda: LinearModel("Y ~ x1", "sqrt").fit(data), "transform 'sqrt'")
    model = LinearModel("Y ~ x1").fit(data)
    _one_line_error(lambda: anova(model, 4), "anova type 4")
    _one_line_error(lambda: analyze(data, "Y ~ x1", repeats="median"), "repeats 'median'")
    _one_line_error(lambda: LinearModel("~ x1").fit(data), "needs a response")


def test_missing_measurements_are_excluded_and_counted(data):
    holes = data.copy()
    holes.loc[[3, 7], "Y"] = np.nan
    holes.loc[11, "x2"] = np.nan
    model = LinearModel("Y ~ x1 + x2").fit(holes)
    assert model.n_excluded_ == 3 and model.n_ == 17
    clean = LinearModel("Y ~ x1 + x2").fit(data.drop(index=[3, 7, 11]))
    pd.testing.assert_frame_equal(coefficient_table(model), coefficient_table(clean))
    assert analyze(holes, "Y ~ x1 + x2").summary.n_excluded == 3


def test_missing_rows_count_towards_the_row_requirement(data):
    holes = data.head(4).copy()
    holes.loc[0, "Y"] = np.nan
    _one_line_error(lambda: LinearModel("Y ~ x1 + x2").fit(holes), r"got 3 \(1 excluded as missing\)")


def test_non_finite_terms_are_refused(data):
    _one_line_error(lambda: LinearModel("Y ~ I(1/x1)").fit(data.assign(x1=0.0)), "not finite")


def test_prediction_needs_the_formula_columns_and_known_levels():
    data = pd.DataFrame({"c": list("abab") * 3, "x": np.arange(12.0), "Y": np.arange(12.0) ** 1.5})
    model = LinearModel("Y ~ C(c) + x").fit(data)
    _one_line_error(lambda: predict(model, pd.DataFrame({"x": [1.0]})), "no column 'c'")
    _one_line_error(lambda: predict(model, pd.DataFrame({"c": ["z"], "x": [1.0]})), "level")


def test_mean_of_repeats_refuses_unknown_columns(data):
    _one_line_error(lambda: mean_of_repeats(data, "T"), "response 'T'")
    _one_line_error(lambda: mean_of_repeats(data, "Y", by=["x3"]), "'x3'")


def test_errors_are_user_errors(data):
    with pytest.raises(UserError):
        LinearModel("Y ~ x1").fit(data.assign(Y=1.0))
