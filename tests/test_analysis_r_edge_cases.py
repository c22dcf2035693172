"""Issue 30 §4: statistics defects found against R 4.2 with held-out probes, each checked against R's own
numbers (tests/reference: the data, the cases, the R script and the JSON it wrote; every table of these cases
is also compared by tests/test_r_reference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, analyze, anova, coefficient_table, fit_summary, predict
from engine.analysis.display import format_p, readable_table
from engine.analysis.labels import column_names
from engine.model.formula import FormulaError, model_matrix
from engine.space.expr import FORMULA_FUNCTIONS

HERE = Path(__file__).parent / "reference"
RTOL = 1e-9
#: As tests/test_r_reference.py: estimates and what follows from them, to the QR's last bits.
ESTIMATE_RTOL = 1e-8


def reference(name: str) -> dict:
    return json.loads((HERE / "r" / f"{name}.json").read_text())


def case_data(name: str) -> pd.DataFrame:
    return pd.read_csv(HERE / "cases" / f"{name}.csv")


def test_a_column_named_intercept_is_a_variable_beside_rs_intercept():
    """Was: the column merged with formulaic's intercept column (also named ``Intercept``), so Types I and III
    fitted another model and Type II raised IndexError."""
    expected = reference("intercept_column")
    model = LinearModel(expected["formula"]).fit(case_data("intercept_column"))
    assert model.column_names_ == ("(Intercept)", "Intercept", "I(Intercept^2)", "x", "Intercept:x")
    np.testing.assert_allclose(coefficient_table(model)["Estimate"], [r["estimate"] for r in expected["coefficients"]],
                               rtol=ESTIMATE_RTOL)
    for typ in (1, 2, 3):
        table = anova(model, typ)
        assert list(table["term"]) == [r["term"] for r in expected[f"anova{typ}"]["rows"]]
        np.testing.assert_allclose(table["Sum Sq"], [r["ss"] for r in expected[f"anova{typ}"]["rows"]],
                                   rtol=ESTIMATE_RTOL)


def test_columns_named_like_constants_or_functions_of_numpy_formulaic_or_r_are_read_as_columns():
    expected = reference("reserved_names")
    model = LinearModel(expected["formula"]).fit(case_data("reserved_names"))
    assert list(model.column_names_) == [r["term"] for r in expected["coefficients"]]
    np.testing.assert_allclose(coefficient_table(model)["Estimate"], [r["estimate"] for r in expected["coefficients"]],
                               rtol=ESTIMATE_RTOL)


@pytest.mark.parametrize("function", sorted({name.split(".")[0] for name in FORMULA_FUNCTIONS}))
def test_a_column_named_like_a_function_the_formula_calls_is_refused_in_one_line(function):
    """R tells a function from a variable by where it stands; formulaic evaluates Python, where the column would
    hide the function, so such a column must be renamed (one line saying so, as for ``I``)."""
    call = {"np": "np.log(x)", "C": "C(x)", "I": "I(x^2)"}.get(function, f"{function}(x)")
    data = pd.DataFrame({function: [1.0, 2.0, 3.0, 4.0, 5.0], "x": [1.0, 2.0, 4.0, 3.0, 5.0], "y": [1.0, 2.0, 2.5, 4.0, 4.5]})
    with pytest.raises(FormulaError, match=rf"^formula 'y ~ {function} \+ .*is both a function and a column; "
                                           r"rename the column$") as refusal:
        LinearModel(f"y ~ {function} + {call}").fit(data)
    assert "\n" not in str(refusal.value)


def test_a_logical_factor_without_intercept_is_coded_by_both_its_levels():
    """Was: ``bFALSE`` dropped (a 0/1 column), so x's coefficient was 0.934 where R's is 0.645 on the probe."""
    expected = reference("logical_no_intercept")
    model = LinearModel("y ~ 0 + b + x").fit(case_data("logical_factors"))
    table = coefficient_table(model)
    assert list(table["term"]) == ["bFALSE", "bTRUE", "x"] == [r["term"] for r in expected["coefficients"]]
    np.testing.assert_allclose(table["Estimate"], [r["estimate"] for r in expected["coefficients"]], rtol=ESTIMATE_RTOL)
    np.testing.assert_allclose(table["Std. Error"], [r["se"] for r in expected["coefficients"]], rtol=RTOL)


MATRICES = reference("model_matrix_names")["matrices"]


@pytest.mark.parametrize("case", MATRICES, ids=[m["formula"] for m in MATRICES])
def test_model_matrix_columns_follow_rs_coding_rule(case):
    """R codes a factor of a term by contrasts when the term without it lies inside an earlier term, else by a
    column per level; without an intercept, the first factor of the first term that has one gets every level."""
    matrix = model_matrix(case["formula"], case_data("logical_factors"))
    assert column_names(matrix.columns, matrix.term_slices) == case["columns"]


def test_predictions_with_a_logical_factor_line_up_with_its_coefficients():
    data = case_data("logical_factors")
    model = LinearModel("y ~ 0 + b + x + g").fit(data)
    predicted = predict(model, data.iloc[:5])["fit"].to_numpy()
    np.testing.assert_allclose(predicted, model.fitted_[:5], rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="not seen"):  # a logical keeps its two levels: TRUE is no new level
        predict(model, data.assign(g="w").iloc[:1])


def test_an_overall_f_p_value_below_1e_294_equals_r_and_still_reads_below_2e_16():
    """Was: scipy's f.sf, 6% off R's pf here (5.66e-299 vs 6.03e-299; both df even)."""
    expected = reference("tiny_p")
    result = analyze(case_data("tiny_p"), expected["formula"])
    assert result.summary.f_pvalue == pytest.approx(expected["summary"]["f_p"], rel=RTOL, abs=0)
    assert result.summary.f_pvalue < 1e-294
    assert format_p(result.summary.f_pvalue) == "< 2e-16"
    assert set(readable_table(result.anova)["Pr(>F)"]) == {"< 2e-16", ""}
    np.testing.assert_allclose(result.anova["Pr(>F)"].to_numpy()[:-1], [r["p"] for r in expected["anova1"]["rows"][:-1]],
                               rtol=ESTIMATE_RTOL)
    assert fit_summary(result.model).f_pvalue == result.summary.f_pvalue


def test_a_logical_column_with_a_missing_value_keeps_rs_names_once_that_row_is_excluded():
    """A missing value leaves pandas' booleans in an object column; R's logical still names ``bFALSE``, ``bTRUE``
    (they read ``bFalse``, ``bTrue`` before)."""
    data = case_data("logical_factors")
    with_missing = data.assign(b=data["b"].astype(object).where(data.index != 3, None))
    model = LinearModel("y ~ 0 + b + x").fit(with_missing)
    assert model.n_excluded_ == 1 and model.column_names_ == ("bFALSE", "bTRUE", "x")
    np.testing.assert_allclose(model.results_.params, LinearModel("y ~ 0 + b + x").fit(data.drop(index=3)).results_.params,
                               rtol=1e-12)
