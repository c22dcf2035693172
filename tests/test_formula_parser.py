"""The formula language read as R reads it: the terms (``attr(terms(f), "term.labels")``) and the intercept
R gives each formula, the operators' algebra, and deep nesting read without recursion."""

from __future__ import annotations

import pytest

from engine.model.formula import FormulaError, parse

COLUMNS = ("y", "a", "b", "c", "x")

#: Formula -> R's term labels (R 4.2, ``attr(terms(f), "term.labels")``) and whether it has an intercept.
R_TERMS = [
    ("y ~ a*b", ("a", "b", "a:b"), True),
    ("y ~ (a + b + c)^2", ("a", "b", "c", "a:b", "a:c", "b:c"), True),
    ("y ~ a/b", ("a", "a:b"), True),
    ("y ~ (a + b)/c", ("a", "b", "a:b:c"), True),
    ("y ~ a + b %in% a", ("a", "a:b"), True),
    ("y ~ a*b - a", ("b", "a:b"), True),
    ("y ~ a*b*c - a:b:c", ("a", "b", "c", "a:b", "a:c", "b:c"), True),
    ("y ~ b:a + a", ("a", "b:a"), True),
    ("y ~ x + b + b:x", ("x", "b", "x:b"), True),
    ("y ~ a + a:a", ("a",), True),
    ("y ~ (a + b)^2 - 1", ("a", "b", "a:b"), False),
    ("y ~ 0 + a", ("a",), False),
    ("y ~ a + 0", ("a",), False),
    ("y ~ -1 + a", ("a",), False),
    ("y ~ 1", (), True),
    ("y ~ a + (b + c) - b", ("a", "c"), True),
    ("y ~ a + I(a^2) + I(1/a)", ("a", "I(a ** 2)", "I(1 / a)"), True),
]


@pytest.mark.parametrize("formula, terms, intercept", R_TERMS)
def test_terms_and_intercept_are_rs(formula, terms, intercept):
    parsed = parse(formula, COLUMNS)
    assert parsed.terms == terms and parsed.has_intercept is intercept and parsed.response == "y"


def test_a_formula_without_response_is_a_right_hand_side():
    parsed = parse("~ a + b", COLUMNS)
    assert parsed.response is None and parsed.terms == ("a", "b")


@pytest.mark.parametrize("formula, message", [
    ("y ~ a ~ b", "more than one '~'"),
    ("y ~ a +", "ends where a term is expected"),
    ("y ~ a b", "unexpected 'b' at column 7"),
    ("y ~ (a + b", "unbalanced parenthesis"),
    ("y ~ a + b)", "unbalanced parenthesis"),
    ("y ~ a + 2", "the number '2' is not a term"),
    ("y ~ (a + b)^x", "interaction power 'x' must be a whole number from 1 to 5"),
    ("y ~ a $ b", "unexpected '\\$' at column 7"),
    ("y ~ `a", "unclosed backquote"),
    ("y + a ~ b", "the response must be a single column"),
])
def test_malformed_formulas_are_refused_in_one_line(formula, message):
    with pytest.raises(FormulaError, match=message) as info:
        parse(formula, COLUMNS)
    assert "\n" not in str(info.value)


def test_deep_nesting_and_long_sign_runs_read_without_recursion():
    assert parse("y ~ " + "(" * 3000 + "a" + ")" * 3000 + " - " * 1001 + "b", COLUMNS).terms == ("a",)
    assert parse("y ~ a" + " + -" * 2001 + " a", COLUMNS).terms == ()


def test_backquoted_names_are_names():
    assert parse("y ~ `a` + `b`:a", COLUMNS).terms == ("a", "a:b")
