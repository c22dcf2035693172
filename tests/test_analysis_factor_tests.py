"""Whole-factor tests (issue 30 §2): the partial F of all a factor's terms equals R's (car's Type II of the
factor as one term, car::linearHypothesis on its coefficients), Holm and Benjamini–Hochberg equal
statsmodels', and the decision fixes factors by them, so an inert factor with one lucky term stays free."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from engine.analysis import AnalysisError, LinearModel, anova, propose_decision
from engine.analysis.factor_tests import adjusted_p, factor_tests
from engine.io.paths import REPO_ROOT
from engine.io.spec import TEMPLATES, parse_spec

REFERENCE = json.loads((REPO_ROOT / "tests" / "reference" / "r" / "factor_tests.json").read_text())
CUBIC = "y ~ " + " + ".join([f"x{i}" for i in range(1, 9)] + [f"I(x{i}^{p})" for p in (2, 3) for i in range(1, 9)])
INERT = {"x2", "x4", "x6"}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.DataFrame(REFERENCE["data"])


@pytest.fixture(scope="module")
def toy_space():
    return parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml").space


@pytest.mark.parametrize(("case", "formula"), [("cubic", CUBIC), ("interaction", "y ~ x1 + x2 + x3 + x5 + I(x5^2) + x1:x3")])
def test_each_factor_s_joint_test_equals_r(data, case, formula):
    """cubic: car::Anova Type II of poly(x, 3, raw = TRUE); interaction: linearHypothesis on x1 and x1:x3, ..."""
    tests = factor_tests(LinearModel(formula).fit(data)).set_index("factor")
    rows = REFERENCE[case]["rows"]
    assert sorted(tests.index) == sorted(r["factor"] for r in rows)
    for r in rows:
        assert tests.loc[r["factor"], "Df"] == r["df"]
        np.testing.assert_allclose(tests.loc[r["factor"], ["F value", "Pr(>F)"]].to_numpy(dtype=float), [r["F"], r["p"]],
                                   rtol=1e-9)
    assert tests.loc["x1", "terms"] == ("x1, I(x1^2), I(x1^3)" if case == "cubic" else "x1, x1:x3")


@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("fdr", "fdr_bh"), ("none", None)])
def test_adjusted_p_values_equal_statsmodels(ours, theirs):
    rng = np.random.default_rng(7)
    for p in (rng.uniform(size=12), rng.uniform(size=8) ** 4, np.array([0.01, 0.01, 0.04, 0.2, 0.2, 1.0])):
        expected = p if theirs is None else multipletests(p, method=theirs)[1]
        np.testing.assert_allclose(adjusted_p(p, ours), expected, rtol=1e-12)
    with_gaps = np.array([0.01, np.nan, 0.03, 0.5])  # an untested factor is not counted among the tests
    expected = multipletests([0.01, 0.03, 0.5], method="holm")[1]
    np.testing.assert_allclose(adjusted_p(with_gaps, "holm")[[0, 2, 3]], expected, rtol=1e-12)
    assert np.isnan(adjusted_p(with_gaps, "holm")[1])
    with pytest.raises(AnalysisError, match="adjustment 'bonferroni'"):
        adjusted_p(with_gaps, "bonferroni")


def test_a_factor_inside_the_other_terms_span_has_no_test_and_is_never_fixed():
    rng = np.random.default_rng(2)
    data = pd.DataFrame({"a": rng.integers(0, 5, 30) * 1.0, "b": rng.integers(0, 5, 30) * 1.0})
    data["c"] = data["a"] * data["b"]  # c is the column of a:b
    data["y"] = 3.0 * data["a"] + rng.normal(size=30)
    model = LinearModel("y ~ a + b + c + a:b").fit(data)
    tests = factor_tests(model).set_index("factor")
    assert tests.loc["c", "Df"] == 0 and np.isnan(tests.loc["c", "Pr(>F)"])  # c adds nothing to a, b, a:b
    assert tests.loc["a", "Df"] == 1  # a and a:b, less a:b (= c, kept)
    assert tests.loc["a", "adjusted p"] == pytest.approx(min(1.0, 2 * tests.loc["a", "Pr(>F)"]))  # 2 factors tested
    decision = propose_decision(model, 0.05, best={"a": 0.0, "b": 0.0, "c": 0.0})
    assert "c" not in decision.proposed["fix"] and any(line.startswith("c: no test") for line in decision.explanation)


def test_an_inert_factor_with_one_lucky_term_is_fixed_by_the_term_rule_only(data, toy_space):
    """The R data: I(x6^2) has p = 0.005 among 24 single tests (x6 is inert), so the paper's per-term rule fixes
    x6; the joint test of x6's three terms, Holm-adjusted across the 8 factors, leaves it free."""
    model = LinearModel(CUBIC).fit(data)
    assert anova(model, 1).set_index("term").loc["I(x6^2)", "Pr(>F)"] < 0.01
    default = propose_decision(model, 0.05, candidates=toy_space)
    assert not INERT & set(default.proposed["fix"]) and {"x1", "x3", "x5", "x7"} <= set(default.proposed["fix"])
    assert default.rule == "factor" and default.adjust == "holm"
    line = next(e for e in default.explanation if e.startswith("x6 "))
    tests = pd.DataFrame(default.evidence["factor_tests"]).set_index("factor")
    f, p, adjusted = tests.loc["x6", ["F value", "Pr(>F)", "adjusted p"]]
    assert line == (f"x6 (x6, I(x6^2), I(x6^3)): F = {f:.3g} on 3 and {model.df_resid_} df, p = {p:.2g}, "
                    f"Holm-adjusted p = {adjusted:.2g} — left free")
    assert "x6" in propose_decision(model, 0.05, candidates=toy_space, rule="term").proposed["fix"]
    fdr = propose_decision(model, 0.05, candidates=toy_space, adjust="fdr")
    assert not INERT & set(fdr.proposed["fix"]) and any("FDR-adjusted p" in e for e in fdr.explanation)
    with pytest.raises(AnalysisError, match="rule 'terms'"):
        propose_decision(model, 0.05, candidates=toy_space, rule="terms")


def test_removing_a_term_removes_the_terms_that_contain_it_and_the_weakest_offered_is_contained_in_none(data):
    """Hierarchy (JMP's stepwise: removing an effect removes the effects containing it): removing x6 never leaves
    I(x6^2); the least significant term offered for removal takes nothing else along."""
    from engine.analysis.effects import containing_terms, effect_summary, formula_without, weakest_term

    model = LinearModel(CUBIC).fit(data)
    assert containing_terms(model, ["x6"]) == ["I(x6^2)", "I(x6^3)"]
    without = formula_without(model, ["x6"])
    assert not {"x6", "I(x6^2)", "I(x6^3)"} & set(without.split("~")[1].replace(" ", "").split("+"))
    assert formula_without(model, ["I(x6^2)"]) == formula_without(model, ["I(x6^2)", "I(x6^3)"])
    assert "x6" in formula_without(model, ["I(x6^2)"]).split("~")[1].replace(" ", "").split("+")
    summary = effect_summary(model, anova(model, 1)).set_index("term")
    assert summary.loc["x6", "^"] == "^" and summary.loc["I(x6^2)", "^"] == "^" and summary.loc["I(x6^3)", "^"] == ""
    weakest = weakest_term(model, summary.reset_index())
    assert weakest.startswith("I(") and weakest.endswith("^3)") and containing_terms(model, [weakest]) == []
    mixed = LinearModel("y ~ x1 + x3 + I(x1^2) + I(1/x2) + x2 + x1:x3").fit(data.assign(x2=data["x2"] + 2))
    assert containing_terms(mixed, ["x1"]) == ["I(x1^2)", "x1:x3"]
    assert containing_terms(mixed, ["x2"]) == [] and containing_terms(mixed, ["I(1/x2)"]) == []
    assert formula_without(mixed, ["x3", "x1"]) == "y ~ I(1/x2) + x2"
