"""A positive objective starts from Box-Cox; a prediction ≤ 0 of a positive objective is flagged."""

from __future__ import annotations

import math

import pytest

from engine.analysis.options import default_transform, nonpositive_warning


@pytest.mark.parametrize(("values", "expected"), [([0.5, 2.0, 1e-9], "boxcox-round"), ([0.5, 0.0], "none"),
                                                  ([-1.0, 3.0], "none"), ([], "none"), ([math.nan, 2.0], "boxcox-round")])
def test_the_default_transform_follows_the_sign_of_the_objective(values, expected):
    assert default_transform(values) == expected


def test_a_nonpositive_prediction_of_a_positive_objective_gets_one_line():
    line = nonpositive_warning(-8.4e-09, [1e-8, 2e-8], "time_per_pixel")
    assert line is not None and "time_per_pixel = -8.4e-09 ≤ 0" in line and "\n" not in line
    assert nonpositive_warning(1e-9, [1e-8], "time") is None
    assert nonpositive_warning(-1.0, [-2.0, 3.0], "y") is None  # the objective itself can be negative
