"""Hostile constraints and formulas (issue 18): each refused in one line naming the field and value,
or given Python's (constraints) and R's (formulas) answer."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd
import pytest

from engine.analysis.labels import split_factors
from engine.errors import UserError
from engine.model.choice import from_formula
from engine.model.formula import MAX_FORMULA_LENGTH, MAX_POWER, MAX_TERMS, FormulaError, model_matrix, parse
from engine.space.expr import MAX_EXPONENT, MAX_LENGTH, MAX_OPERATORS, Expression, ExpressionError, check
from engine.space.factors import Factor, Space

NAMES = ("x", "y")
#: x in -1..3 and y in 0..2, every pair: a 5 x 3 grid.
X, Y = (np.array(v, dtype=np.int64) for v in zip(*itertools.product(range(-1, 4), range(3))))


def holds(text: str, **columns) -> np.ndarray:
    return Expression.compile(text, NAMES).evaluate(columns or {"x": X, "y": Y})


def refused(call, pattern: str, error: type[ValueError] = ExpressionError) -> str:
    with pytest.raises(error, match=pattern) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    return message


# -- constraints: arity --------------------------------------------------------------------------
@pytest.mark.parametrize("text, pattern", [
    ("abs(x, y) > 0", r"^constraint 'abs\(x, y\) > 0': abs\(\) takes exactly 1 argument, got 2$"),
    ("abs() > 0", r"abs\(\) takes exactly 1 argument, got 0$"),
    ("min() < 1", r"^constraint 'min\(\) < 1': min\(\) takes at least 2 arguments, got 0$"),
    ("max(x) < 1", r"max\(\) takes at least 2 arguments, got 1$"),
])
def test_function_arity_is_checked_when_the_constraint_is_created(text, pattern):
    refused(lambda: Expression.compile(text, NAMES), pattern)


def test_abs_with_two_arguments_never_writes_into_a_column():
    y = Y.copy()
    refused(lambda: holds("abs(x, y) > 0", x=X, y=y), r"abs\(\) takes exactly 1 argument")
    assert (y == Y).all()


# -- constraints: Python's arithmetic ------------------------------------------------------------
def test_booleans_add_as_integers():
    result = holds("(x > 0) + (y > 1) == 1")
    python = [(a > 0) + (b > 1) == 1 for a, b in zip(X.tolist(), Y.tolist())]
    assert result.tolist() == python and result.sum() == 8  # 'or' would give 11


def test_and_or_min_max_return_operands_as_python_does():
    assert holds("(y and 5) == 5").tolist() == [(b and 5) == 5 for b in Y.tolist()]
    assert holds("(y or 7) == 7").tolist() == [(b or 7) == 7 for b in Y.tolist()]
    assert holds("min(x, y, 1) == x").tolist() == [min(a, b, 1) == a for a, b in zip(X.tolist(), Y.tolist())]


def test_integers_beyond_int64_compare_as_python_compares_them():
    x = np.arange(1, 6, dtype=np.int64)  # 2 * 2**62 wraps to -2**63 in int64
    assert holds("x * 2**62 > 2**63", x=x, y=x).tolist() == [v * 2**62 > 2**63 for v in range(1, 6)]
    assert holds("x * 2**62 == 2**62 * x", x=x, y=x).all()
    assert holds("2 ** (x * 12) >= 2**48", x=x, y=x).tolist() == [2 ** (v * 12) >= 2**48 for v in range(1, 6)]


def test_an_integer_result_float64_would_round_is_refused_not_wrong():
    x = np.arange(1, 6, dtype=np.int64)
    refused(lambda: holds("x ** 40 > 0", x=x, y=x),
            r"^constraint 'x \*\* 40 > 0': the integer result 12157665459056928801 is beyond 2\*\*53 and not exact")
    refused(lambda: Expression.compile("x < 2**53 + 1", NAMES), r"9007199254740993 is beyond 2\*\*53")
    refused(lambda: holds("(x * 2**60) ** 20 > 0", x=x, y=x),
            r"integer result is beyond float64's range")


def test_integer_columns_beyond_two_to_the_53_must_be_exact():
    x = np.array([2**60, 2**60 + 1], dtype=np.int64)
    refused(lambda: holds("x > 0", x=x, y=x), r"^constraint 'x > 0': column 'x': value 1152921504606846977 is beyond")
    assert holds("x == 2**60", x=x[:1], y=x[:1]).tolist() == [True]


# -- constraints: size bounds --------------------------------------------------------------------
@pytest.mark.parametrize("text, pattern", [
    ("2**10**10 > x", r"^constraint '2\*\*10\*\*10 > x': exponent 10000000000 of '\*\*' is beyond the limit of ±64$"),
    ("9**9**9 > x", r"exponent 387420489 of '\*\*' is beyond the limit of ±64$"),
    ("3^10^8 > x", r"^constraint '3\^10\^8 > x': operator '\^' is not allowed$"),
    ("x ** 65 > 0", r"exponent 65 of '\*\*' is beyond the limit"),
    ("x ** -(2*40) > 0", r"exponent -80 of '\*\*' is beyond the limit"),
    ("9" * 400 + " > x", r"^constraint '9{70,}…: integer 9{30,}… is beyond 2\*\*53 and not exact in float64$"),
    ("x < 2**64 - 1", r"integer result 18446744073709551615 is beyond 2\*\*53"),
])
def test_huge_constants_are_refused_at_create_without_being_computed(text, pattern):
    start = time.perf_counter()
    refused(lambda: Expression.compile(text, NAMES), pattern)
    assert time.perf_counter() - start < 1
    assert MAX_EXPONENT == 64


@pytest.mark.parametrize("text, pattern", [
    ("-(" * 10_000 + "x" + ")" * 10_000, rf"longer than {MAX_LENGTH} characters$"),
    ("(" * 10_000 + "x" + ")" * 10_000, rf"longer than {MAX_LENGTH} characters$"),
    ("-" * 10_000 + "x", rf"longer than {MAX_LENGTH} characters$"),
    ("-" * 200 + "x", rf"more than {MAX_OPERATORS} operators and brackets$"),
    ("(" * 60 + "x" + ")" * 60, rf"more than {MAX_OPERATORS} operators and brackets$"),
    ("x" + "+x" * 150, rf"more than {MAX_OPERATORS} operators and brackets$"),
])
def test_deep_nesting_is_refused_before_parsing(text, pattern):
    message = refused(lambda: Expression.compile(text, NAMES), pattern)
    assert message.startswith("constraint '") and len(message) < 200


def test_nesting_within_the_bounds_still_works():
    assert holds("-" * 90 + "x == x").all()
    assert holds("(" * 40 + "x" + ")" * 40 + " == x").all()


# -- constraints: division by zero, text ------------------------------------------------------------
def test_division_by_zero_follows_ieee_and_nan_does_not_hold():
    assert holds("x / 0 > 1").tolist() == [v > 0 for v in X.tolist()]  # inf, -inf or nan (0/0)
    assert not holds("(x - x) / (x - x)").any()  # nan: not valid
    assert not holds("0/0").any()
    assert holds("x % 0 != x % 0").all()  # nan != nan, as IEEE (and Python's floats) say


def test_text_against_numbers_as_python():
    assert not holds("'a' == x").any()
    refused(lambda: holds("'a' < x"), r"^constraint \"'a' < x\": '<' cannot order text and numbers$")
    refused(lambda: Expression.compile("x + 'a' > 0", NAMES), r"text 'a' is only allowed in a comparison$")


def test_names_that_read_as_something_else():
    refused(lambda: check("lambda > 1", ["lambda"]), r"column 'lambda' is a Python keyword, unusable here; rename it$")
    refused(lambda: check("abs(abs) > 1", ["abs"]), r"'abs' is both a function and a column; rename the column$")


def test_a_space_counts_and_refuses_as_the_expressions_do():
    factors = [Factor("x", "integer", tuple(range(-1, 4))), Factor("y", "integer", (0, 1, 2))]
    assert Space(factors, ["(x > 0) + (y > 1) == 1"]).count_valid() == 8
    with pytest.raises(UserError, match=r"abs\(\) takes exactly 1 argument") as info:
        Space(factors, ["abs(x, y) > 0"])
    assert "\n" not in str(info.value)
    big = Space([Factor("x", "integer", (3, 4))], ["x ** 40 > 0"])
    with pytest.raises(UserError, match=r"x \*\* 40 > 0.*12157665459056928801") as info:
        big.enumerate()
    assert "\n" not in str(info.value)


# -- formulas -----------------------------------------------------------------------------------
FRAME = pd.DataFrame({
    "t": np.linspace(1.0, 3.0, 10),
    "x": np.arange(1, 11, dtype=np.int64),
    "y": np.arange(10, 0, -1, dtype=np.int64),
    "k": np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1], dtype=np.int64),
    "opt": ["a:b", "c"] * 5,
})


def test_powers_in_formulas_are_r_doubles_not_wrapped_int64():
    mm = model_matrix("t ~ I(x^20)", FRAME)
    assert mm.X[:, 1].tolist() == [float(v) ** 20 for v in range(1, 11)]  # 10**20 > 2**63
    assert model_matrix("t ~ I(x^-1)", FRAME).X[:, 1].tolist() == [1 / v for v in range(1, 11)]


def test_integer_levels_keep_their_names_and_sqrt_works():
    assert model_matrix("t ~ C(k)", FRAME).columns == ("Intercept", "C(k)[T.2]", "C(k)[T.3]")
    assert model_matrix("t ~ sqrt(x)", FRAME).X[:, 1].tolist() == np.sqrt(np.arange(1, 11)).tolist()


@pytest.mark.parametrize("formula, pattern", [
    ("t ~ I(2**10**10)", r"^formula 't ~ I\(2\*\*10\*\*10\)': term 'I\(2 \*\* 10 \*\* 10\)': exponent 10000000000 of"),
    ("t ~ I(3^10^8)", r"^formula 't ~ I\(3\^10\^8\)': term 'I\(3 \*\* 10 \*\* 8\)': exponent 100000000 of"),
    ("t ~ (x + y)^50",
     rf"^formula 't ~ \(x \+ y\)\^50': interaction power '50' must be a whole number from 1 to {MAX_POWER}$"),
    ("t ~ x^y", r"interaction power 'y' must be a whole number from 1 to 5$"),
    ("t ~ " + "*".join(f"x{i}" for i in range(15)), rf"expands to more than {MAX_TERMS:,} terms$"),
    ("t ~ x|y", r"^formula 't ~ x\|y': '\|' \(a multi-part formula\) is not supported$"),
    ("t ~ .", r"'\.' \(every other column\) is not supported"),
    ("t ~ I(`x`)", r"^formula 't ~ I\(`x`\)': term 'I\(`x`\)': syntax error at column 3$"),
    ("t ~ {-x} + x",
     r"^formula 't ~ \{-x\} \+ x': \{\.\.\.\} is Python, not R formula syntax; write I\(\.\.\.\)$"),
    ("t ~ ", r"^formula 't ~': empty right-hand side; write '~ 1' for an intercept-only model$"),
    ("t ~ I(2)", r"term 'I\(2\)' uses no column"),
    ("t ~ C(k, x)", r"C\(\) takes exactly 1 argument, got 2$"),
    ("t ~ I(" + "-" * 5_000 + "x)", r"term 'I\(-+…: longer than 1000 characters$"),
    ("t ~ log(" + "(" * 150 + "x" + ")" * 150 + ")", r"more than 100 operators and brackets$"),
    ("t ~ " + "x + " * 3000 + "x", rf"longer than {MAX_FORMULA_LENGTH:,} characters$"),
])
def test_hostile_formulas_are_refused_at_parse_in_one_line(formula, pattern):
    start = time.perf_counter()
    refused(lambda: parse(formula, FRAME.columns), pattern, FormulaError)
    assert time.perf_counter() - start < 2


def test_deep_parentheses_and_unary_chains_outside_python_code_parse():
    assert parse("t ~ " + "(" * 3000 + "x" + ")" * 3000, FRAME.columns).terms == ("x",)
    assert parse("t ~ " + "+" * 3000 + "x", FRAME.columns).terms == ("x",)
    assert parse("~ 1", FRAME.columns).terms == ()


def test_keyword_columns_are_refused_by_name():
    data = FRAME.assign(**{"lambda": FRAME.x})
    for formula in ("t ~ lambda", "t ~ `lambda`", "t ~ I(lambda^2)"):
        refused(lambda: parse(formula, data.columns), r"column 'lambda' is a Python keyword, unusable here",
                FormulaError)


def test_what_a_formula_cannot_evaluate_is_one_formula_error_line():
    refused(lambda: model_matrix("t ~ I(x and y)", FRAME), r"^formula 't ~ I\(x and y\)': .*and, or and if", FormulaError)
    refused(lambda: model_matrix("t ~ I(opt + 1)", FRAME), r"^formula 't ~ I\(opt \+ 1\)': arithmetic on text", FormulaError)
    refused(lambda: model_matrix("t ~ I(C(x) + 1)", FRAME), r"C\(\.\.\.\) must be a whole factor", FormulaError)


def test_term_labels_split_outside_quotes_and_levels():
    assert split_factors("I(opt == 'a:b'):x") == ("I(opt == 'a:b')", "x")
    assert split_factors("C(opt)[T.it's]:x") == ("C(opt)[T.it's]", "x")
    mm = model_matrix("t ~ I(opt == 'a:b'):x", FRAME)
    assert mm.X[:, 1].tolist() == [float(v) if v % 2 else 0.0 for v in range(1, 11)]


def test_the_term_builder_refuses_as_the_formula_parser_does():
    space = Space([Factor("tile", "ordinal", (1, 2, 4)), Factor("unroll", "integer", (1, 2, 3))])
    refused(lambda: from_formula("t ~ (tile + unroll)^9", space), r"interaction power '9'", FormulaError)
    refused(lambda: from_formula(None, space), r"^formula: expected text, got NoneType$", FormulaError)
    assert from_formula("t ~ tile + I(unroll^2)", space).quadratic == ["unroll"]
