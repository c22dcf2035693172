"""Statistics tables as people read them: significant digits, R's ``< 2e-16``, blanks for missing cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis.display import format_number, format_p, readable_table


@pytest.mark.parametrize(("value", "text"), [(55.717649, "55.72"), (1.2e-9, "1.2e-09"), (3.0, "3"), (23, "23"),
                                             (-0.000123456, "-0.0001235"), (2.5e7, "2.5e+07"), (None, ""),
                                             (float("nan"), ""), (pd.NA, "")])
def test_numbers_keep_their_significant_digits(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize(("p", "text"), [(7.574931e-05, "7.6e-05"), (0.2416, "0.24"), (1e-300, "< 2e-16"),
                                         (0.0, "< 2e-16"), (2.3e-16, "2.3e-16"), (np.nan, ""), (None, "")])
def test_p_values_follow_r(p, text):
    assert format_p(p) == text


def test_an_anova_table_reads_as_text_with_blank_residual_cells():
    table = pd.DataFrame({"term": ["x5", "Residuals"], "Df": [1, 23], "Sum Sq": [2.1e-9, 5.5e-8],
                          "F value": [83.2, np.nan], "Pr(>F)": [4.2e-20, np.nan], "stars": ["***", None]})
    shown = readable_table(table)
    assert shown.to_dict("list") == {"term": ["x5", "Residuals"], "Df": ["1", "23"], "Sum Sq": ["2.1e-09", "5.5e-08"],
                                     "F value": ["83.2", ""], "Pr(>F)": ["< 2e-16", ""], "stars": ["***", ""]}
