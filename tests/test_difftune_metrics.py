"""The accuracy figures of a throughput predictor, checked by hand on small cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.surrogates.difftune.metrics import accuracy, accuracy_table


def test_the_figures_by_hand():
    result = accuracy([110.0, 90.0, 300.0, 400.0], [100.0, 100.0, 300.0, 500.0])
    assert result.n == 4
    assert result.mape == pytest.approx((0.1 + 0.1 + 0.0 + 0.2) / 4)
    assert result.median_ape == pytest.approx(0.1)
    assert result.within_5pct == 0.25
    assert result.kendall_tau == pytest.approx(pd.Series([110.0, 90, 300, 400]).corr(pd.Series([100.0, 100, 300, 500]),
                                                                                    method="kendall"))


def test_missing_values_and_a_non_positive_truth_are_left_out():
    result = accuracy([1.0, np.nan, 2.0, 5.0], [1.0, 2.0, 0.0, np.inf])
    assert result.n == 1 and result.mape == 0.0 and np.isnan(result.kendall_tau)
    assert accuracy([], []).n == 0
    with pytest.raises(ValueError, match="2 predictions for 1 true values"):
        accuracy([1.0, 2.0], [1.0])


def test_one_row_per_group():
    frame = pd.DataFrame({"predictor": ["a", "a", "b", "b"], "cycles": [100.0, 200.0, 150.0, 200.0],
                          "truth": [100.0, 200.0, 100.0, 200.0]})
    table = accuracy_table(frame, "predictor").set_index("predictor")
    assert table.loc["a", "mape"] == 0.0 and table.loc["b", "mape"] == pytest.approx(0.25)
    assert list(accuracy_table(frame, ["predictor"]).columns[:2]) == ["predictor", "n"]
