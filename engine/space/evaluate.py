"""Evaluating a checked expression (:mod:`engine.space.expr`) over numpy columns, with Python's meaning.

The rules are the expression language's (see :mod:`engine.space.expr`): numbers in float64 with integer results
beyond 2**53 verified against Python's exact ones, booleans as 0 and 1, ``and``/``or``/``min``/``max`` returning
an operand, IEEE division by zero, nan never holding. Only an expression that :func:`engine.space.expr.check`
passed arrives here; this module is imported when one is evaluated, so checking one needs no numpy.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, cast

import numpy as np

from engine.space.language import (
    BINARY_OPERATORS,
    COMPARISONS,
    EXACT_INTEGERS,
    OP_SYMBOLS,
    UNARY_OPERATORS,
    ExpressionError,
    number_text,
)

_BINOPS: dict[type[ast.AST], Callable[..., Any]] = {op: getattr(np, name) for op, name in BINARY_OPERATORS.items()}
_CMPOPS: dict[type[ast.AST], Callable[..., Any]] = {op: getattr(np, name) for op, name in COMPARISONS.items()}
_UNARY: dict[type[ast.AST], Callable[..., Any]] = {op: getattr(np, name) for op, name in UNARY_OPERATORS.items()}
#: Python's own integer arithmetic, to verify float64 results beyond 2**53.
_EXACT_BINOPS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class Value(NamedTuple):
    """An evaluated subexpression: float64, bool or text data, and whether Python would hold integers."""

    data: Any
    ints: bool


def _smallest(*values: Value) -> Value:
    """Python's ``min``: the first of the smallest arguments."""
    return _first_extreme(values, ast.Lt)


def _largest(*values: Value) -> Value:
    """Python's ``max``: the first of the largest arguments."""
    return _first_extreme(values, ast.Gt)


def _magnitude(value: Value) -> Value:
    return Value(np.abs(_number(value)), value.ints)


#: What each of :data:`engine.space.expr.CONSTRAINT_FUNCTIONS` computes.
_FUNCTIONS: dict[str, Callable[..., Value]] = {"min": _smallest, "max": _largest, "abs": _magnitude}


def run(node: ast.AST, columns: Mapping[str, np.ndarray], label: str) -> Value:
    """Evaluate a checked tree; a refusal names the expression."""
    try:
        with np.errstate(all="ignore"):
            return _eval(node, columns)
    except ExpressionError as exc:
        raise ExpressionError(f"{label}: {exc}") from None


def _eval(node: ast.AST, cols: Mapping[str, np.ndarray]) -> Value:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (bool, str)):
            return Value(value, isinstance(value, bool))
        return Value(np.float64(cast(float, value)), isinstance(value, int))  # check() admits int and float only
    if isinstance(node, ast.Name):
        return _column(node.id, cols)
    if isinstance(node, ast.BinOp):
        return _arithmetic(type(node.op), _eval(node.left, cols), _eval(node.right, cols))
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, cols)
        if isinstance(node.op, ast.Not):
            return Value(np.logical_not(_truth(operand.data)), True)
        return Value(_UNARY[type(node.op)](_number(operand)), operand.ints)
    if isinstance(node, ast.BoolOp):
        return _boolean(isinstance(node.op, ast.And), [_eval(value, cols) for value in node.values])
    if isinstance(node, ast.Compare):
        left, result = _eval(node.left, cols), True
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, cols)
            result = np.logical_and(result, _compare(type(op), left.data, right.data))
            left = right
        return Value(result, True)
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_eval(part, cols) for part in (node.test, node.body, node.orelse))
        return Value(np.where(_truth(test.data), body.data, orelse.data), body.ints or orelse.ints)
    if isinstance(node, ast.Call):
        function = cast(ast.Name, node.func).id  # check() admits calls by plain name only
        return _FUNCTIONS[function](*(_eval(arg, cols) for arg in node.args))
    raise ExpressionError(f"cannot evaluate {type(node).__name__!r}")  # unreachable after check()


def _column(name: str, cols: Mapping[str, np.ndarray]) -> Value:
    """A column as numbers (integers flagged; converted to float64 by arithmetic), booleans or text."""
    if name not in cols:
        raise ExpressionError(f"no values given for '{name}'")
    data = np.asarray(cols[name])
    kind = data.dtype.kind
    if kind == "b":
        return Value(data, True)
    if kind in "iu":
        return Value(_exact_integers(name, data), True)
    if kind == "f":  # integer factors can arrive as floats: integral values are integers to Python
        data = data.astype(np.float64, copy=False)
        return Value(data, bool(np.all((data == np.trunc(data)) | np.isnan(data))))
    if kind in "OUS":
        return Value(data, False)
    raise ExpressionError(f"column '{name}' holds {data.dtype} values, not numbers, booleans or text")


def _exact_integers(name: str, data: np.ndarray) -> np.ndarray:
    """An integer column, refused when a value is beyond 2**53 and would round as float64."""
    if data.size and (data.min() < -EXACT_INTEGERS or data.max() > EXACT_INTEGERS):
        big = (data > EXACT_INTEGERS) | (data < -EXACT_INTEGERS)
        for value in np.unique(data[big]).tolist():  # few distinct levels
            if float(value) != value:
                raise ExpressionError(f"column '{name}': value {value} is beyond 2**53 and not exact in float64")
    return data


def _number(value: Value) -> Any:
    """Numeric data for arithmetic: booleans become 0 and 1 (Python's meaning), text is refused."""
    data = value.data
    if isinstance(data, str) or (isinstance(data, np.ndarray) and data.dtype.kind in "OUS"):
        raise ExpressionError("arithmetic on text is not allowed")
    return np.asarray(data, dtype=np.float64)


def _arithmetic(op: type[ast.AST], left: Value, right: Value) -> Value:
    x, y = _number(left), _number(right)
    ints = left.ints and right.ints and op is not ast.Div and not (op is ast.Pow and np.all(y < 0))
    out = _integer_power(x, y) if ints and op is ast.Pow else _BINOPS[op](x, y)
    if ints:
        _verify_integers(op, x, y, out)
    return Value(out, ints)


def _integer_power(x: Any, y: Any) -> np.ndarray:
    """``x ** y`` for whole ``y >= 0`` by repeated squaring (np.power elsewhere).

    Each product is correctly rounded, so the result is exact wherever it stays below 2**53;
    vectorised ``pow`` may be an ulp off even there. Exponents past 2,100 are cut to 2,100 or 2,101
    (same parity): any base beyond ±1 has overflowed by then, and 0, 1 and -1 only see the parity.
    """
    x, y = np.broadcast_arrays(x, y)
    whole = np.isfinite(y) & (y >= 0) & (y == np.trunc(y))
    exponent = np.where(whole, y, 0.0)
    exponent = np.where(exponent > 2100, 2100 + exponent % 2, exponent)
    out, base = np.ones(x.shape), x.astype(np.float64)
    while (exponent > 0).any():
        out = np.where(exponent % 2 == 1, out * base, out)
        base, exponent = base * base, np.floor(exponent / 2)
    return np.where(whole, out, np.power(x, y))


def _verify_integers(op: type[ast.AST], x: Any, y: Any, out: Any) -> None:
    """Refuse an integer result that float64 rounded or overflowed where Python's integers are exact.

    Below 2**53 float64 is exact, so only rows beyond it (or with operands beyond it, for ``//`` and
    ``%``) are recomputed with Python integers; those are bounded by float64's range, so the
    recomputation is cheap. Rows Python would raise on (division by zero) keep their IEEE value.
    """
    x, y, out = np.broadcast_arrays(x, y, out)
    suspect = ~(np.abs(out) < EXACT_INTEGERS)
    if op in (ast.FloorDiv, ast.Mod):
        suspect |= (np.abs(x) >= EXACT_INTEGERS) | (np.abs(y) >= EXACT_INTEGERS)
        suspect &= y != 0
    if not suspect.any():
        return
    suspect &= np.isfinite(x) & np.isfinite(y) & ~np.isnan(out)
    if op is ast.Pow:
        suspect &= (x != 0) | (y >= 0)
    if np.isinf(out[suspect]).any():
        raise ExpressionError("an integer result is beyond float64's range (about 1.8e308)")
    exact = _EXACT_BINOPS[op](_python(x[suspect]), _python(y[suspect]))
    wrong = np.asarray(exact != out[suspect].astype(object), dtype=bool)
    if wrong.any():
        value = exact[np.argmax(wrong)]
        raise ExpressionError(f"the integer result {number_text(value)} is beyond 2**53 and not exact in float64")


def _python_number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


_python = np.frompyfunc(_python_number, 1, 1)


def _compare(op: type[ast.AST], left: Any, right: Any) -> Any:
    """A comparison as Python makes it: text never equals a number, and cannot be ordered against one."""
    try:
        return _CMPOPS[op](left, right)
    except TypeError:
        if op in (ast.Eq, ast.NotEq):
            return np.full(np.broadcast(left, right).shape, op is ast.NotEq)
        raise ExpressionError(f"'{OP_SYMBOLS[op]}' cannot order text and numbers") from None


def _truth(data: Any) -> np.ndarray:
    """Python's ``bool`` of each value (nan is true, as in Python)."""
    data = np.asarray(data)
    if data.dtype.kind in "OUS":
        return np.asarray(np.frompyfunc(bool, 1, 1)(data), dtype=bool)
    truth: np.ndarray = data != 0  # np.bool_ when data is 0-d
    return truth


def holds(value: Value) -> np.ndarray:
    """Truth of a constraint's value; nan (an undefined result such as ``0/0``) does not hold."""
    data = np.asarray(value.data)
    truth = _truth(data)
    return truth & ~np.isnan(data) if data.dtype.kind == "f" else truth


def _boolean(conjunction: bool, values: list[Value]) -> Value:
    """Python's ``and``/``or``: the first operand that decides, row by row."""
    out = values[0]
    for value in values[1:]:
        truth = _truth(out.data)
        keep = ~truth if conjunction else truth
        out = Value(np.where(keep, out.data, value.data), out.ints or value.ints)
    return out


def _first_extreme(values: Iterable[Value], op: type[ast.AST]) -> Value:
    values = list(values)
    out = values[0]
    for value in values[1:]:
        better = _compare(op, value.data, out.data)
        out = Value(np.where(better, value.data, out.data), out.ints or value.ints)
    return out
