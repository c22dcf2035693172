"""R's term order, R's names and stars, and R's handling of aliased columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import AnalysisError, LinearModel, anova, coefficient_table, significant_terms, stars
from engine.analysis.labels import column_display, column_names, term_display


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({f"x{i}": rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], 40) for i in (1, 3, 5, 8)})
    frame["x5"] += 2.0  # keep 1/x5 finite
    frame["Y"] = 1 + frame["x1"] - frame["x3"] + frame["x1"] * frame["x3"] + frame["x8"] ** 2 + rng.normal(0, 0.3, 40)
    return frame


def test_orio_style_formula_is_analysed_in_rs_order(data):
    # Orio writes interactions, quadratics, linears, inverses, cubics; R's terms() puts degree first.
    model = LinearModel("Y ~ x1:x3 + I(x8^2) + x1 + x3 + x8 + I(1/x5) + I(x3^3)").fit(data)
    assert list(anova(model, 1)["term"]) == ["I(x8^2)", "x1", "x3", "x8", "I(1/x5)", "I(x3^3)", "x1:x3", "Residuals"]
    assert list(coefficient_table(model)["term"])[:2] == ["(Intercept)", "I(x8^2)"]


def test_type1_depends_on_written_order_but_not_the_total(data):
    a = anova(LinearModel("Y ~ x1 + I(x8^2) + x8").fit(data), 1).set_index("term")
    b = anova(LinearModel("Y ~ x8 + I(x8^2) + x1").fit(data), 1).set_index("term")
    assert a.loc["x1", "Sum Sq"] != pytest.approx(b.loc["x1", "Sum Sq"], rel=1e-6)
    assert a["Sum Sq"].sum() == pytest.approx(b["Sum Sq"].sum(), rel=1e-12)
    t2a = anova(LinearModel("Y ~ x1 + I(x8^2) + x8").fit(data), 2).set_index("term")
    t2b = anova(LinearModel("Y ~ x8 + I(x8^2) + x1").fit(data), 2).set_index("term")
    pd.testing.assert_series_equal(t2a.loc[["x1", "x8"], "F value"], t2b.loc[["x1", "x8"], "F value"], rtol=1e-10)


def test_aliased_columns_are_dropped_like_r():
    # On a two-level design x8^2 == 1 is the intercept: R reports it as aliased (NA) and aov omits it.
    corners = pd.DataFrame({"x1": [-1, 1, -1, 1, -1, 1], "x8": [-1, -1, 1, 1, -1, 1], "Y": [1.0, 2.5, 0.7, 3.1, 1.2, 2.9]})
    model = LinearModel("Y ~ x1 + x8 + I(x8^2)").fit(corners)
    assert model.aliased_ == ("I(x8^2)",)
    assert list(coefficient_table(model)["term"]) == ["(Intercept)", "x1", "x8"]
    assert "I(x8^2)" not in set(anova(model, 1)["term"])  # aov omits it
    row = anova(model, 2).set_index("term").loc["I(x8^2)"]  # car lists it with 0 df and no test
    assert row["Df"] == 0 and row[["Sum Sq", "F value", "Pr(>F)"]].isna().all()
    with pytest.raises(AnalysisError, match=r"Type III ANOVA: the model has aliased coefficients \(I\(x8\^2\)\)"):
        anova(model, 3)  # car refuses: its tests would depend on which column was dropped
    assert anova(model, 1)["Df"].iloc[-1] == 3


def test_r_names_and_stars():
    assert term_display("I(x8 ** 2)") == "I(x8^2)"
    assert term_display("I(1 / lws_y):C(v)") == "I(1/lws_y):C(v)"
    assert column_display("C(vector_length)[T.16]:load_overlap[T.TRUE]") == "C(vector_length)16:load_overlapTRUE"
    assert column_display("load_overlap[FALSE]") == "load_overlapFALSE"
    assert column_names(["Intercept", "Intercept", "x"], {"1": slice(0, 1), "Intercept": slice(1, 2)}) == [
        "(Intercept)", "Intercept", "x"]  # the intercept by its term; a data column may have the matrix's name
    assert [stars(p) for p in (0.0, 0.001, 0.0010001, 0.01, 0.05, 0.0500001, 0.1, 0.1000001, 1.0)] == [
        "***", "***", "**", "**", "*", ".", ".", " ", " ",
    ]
    assert stars(math.nan) is None and stars(None) is None


def test_significant_terms_never_include_the_intercept(data):
    model = LinearModel("Y ~ x1 * x3 + I(x8^2)").fit(data)
    table = anova(model, 3)
    assert "(Intercept)" in set(table["term"])
    assert set(significant_terms(table, 0.05)) <= {"x1", "x3", "I(x8^2)", "x1:x3"}
    assert "x1:x3" in significant_terms(anova(model, 1), 0.05)


def test_interaction_factors_follow_the_order_the_formula_first_names_them():
    """R's terms(): ``y ~ x + b + b:x`` has the term ``x:b`` (coefficient ``x:bTRUE``); written first, ``b:x`` stays."""
    data = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "b": [True, False] * 3, "y": [1.0, 2.2, 2.9, 4.4, 5.1, 6.3]})
    model = LinearModel("y ~ x + b + b:x").fit(data)
    assert [t.display for t in model.terms_] == ["x", "b", "x:b"]
    assert model.column_names_ == ("(Intercept)", "x", "bTRUE", "x:bTRUE")
    assert [t.display for t in LinearModel("y ~ b:x + x").fit(data).terms_] == ["x", "b:x"]


def test_a_dotted_column_name_is_explained_in_one_line():
    data = pd.DataFrame({"x.y": [1.0, 2.0, 3.0, 4.0], "y": [1.0, 2.5, 2.9, 4.2]})
    with pytest.raises(ValueError, match=r"^formula 'y ~ x\.y': term 'x\.y': column 'x\.y': a dot in a name reads as "
                                         r"attribute access here; rename the column \(e\.g\. 'x_y'\)$"):
        LinearModel("y ~ x.y").fit(data)
