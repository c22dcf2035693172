import numpy as np
import pytest

from engine.space.expr import Expression, ExpressionError, check


def cols(**arrays):
    return {k: np.asarray(v) for k, v in arrays.items()}


def test_arithmetic_comparison_and_logic_are_vectorised():
    expr = Expression.compile("a % b == 0 and a / b <= 4 or min(a, b) > 10", ["a", "b"])
    result = expr.evaluate(cols(a=[4, 6, 12, 20, 11], b=[2, 4, 3, 5, 11]))
    assert result.tolist() == [True, False, True, True, True]


def test_chained_comparison_and_abs_max():
    expr = Expression.compile("1 <= abs(a - b) < max(a, 3)", ["a", "b"])
    assert expr.evaluate(cols(a=[1, 5, 2], b=[1, 1, 4])).tolist() == [False, True, True]


def test_boolean_factor_and_string_level():
    expr = Expression.compile("U_I == 1 or flag == True", ["U_I", "flag"])
    assert expr.evaluate(cols(U_I=[1, 2, 2], flag=[False, True, False])).tolist() == [True, True, False]
    expr = Expression.compile("opt != 'O0'", ["opt"])
    assert expr.evaluate(cols(opt=np.array(["O0", "O3"], dtype=object))).tolist() == [False, True]


def test_used_names_are_reported():
    assert check("lws_y <= threads_number", ["lws_y", "threads_number", "other"]) == {"lws_y", "threads_number"}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("__import__('os')", "call to '__import__'"),
        ("a.__class__", "attribute access '.__class__'"),
        ("unknown < 3", "unknown name 'unknown'"),
        ("open('x')", "call to 'open'"),
        ("[a for a in b]", "ListComp"),
        ("a[0]", "Subscript"),
        ("lambda: 1", "Lambda"),
        ("a | b", "operator '|'"),
        ("a in b", "operator 'in'"),
        ("min(a, key=b)", "keyword arguments"),
        ("a <", "syntax error"),
        ("", "empty"),
    ],
)
def test_hostile_and_malformed_expressions_are_rejected_with_the_token(text, fragment):
    with pytest.raises(ExpressionError) as info:
        Expression.compile(text, ["a", "b"])
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_division_by_zero_does_not_raise():
    expr = Expression.compile("a / b > 1", ["a", "b"])
    assert expr.evaluate(cols(a=[1.0, 3.0], b=[0.0, 1.0])).tolist() == [True, True]
