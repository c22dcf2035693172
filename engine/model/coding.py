"""A formula's factors evaluated over data and coded into model-matrix columns as R's ``model.matrix`` codes them.

A factor is numeric (one column) or categorical (levels and a code per row): a text column, a logical column
named as it is (R's logical: levels ``FALSE`` and ``TRUE``), or ``C(...)`` of anything (integral numbers as
integers, so a level reads ``2`` as in R, not ``2.0``). Inside an expression a logical is the number 0 or 1
(R's coercion: ``I(b * x)``) and text stays text (``I(opt == 'a')``). Expressions are evaluated here by a
walk over their checked syntax tree in float64 (R's doubles: ``I(x^20)`` cannot wrap around); division by
zero and overflow give inf and nan as in R, and :mod:`engine.analysis.data` refuses them in one line.

Column names follow the convention :mod:`engine.analysis.labels` translates into R's: ``v[T.2]`` for a
treatment contrast, ``v[2]`` for a level coded in full, ``v[S.2]`` for a sum-to-zero contrast.
"""

from __future__ import annotations

import ast
import functools
import itertools
import operator
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.errors import brief

#: R's levels of a logical, in R's order (its coefficients are ``bFALSE`` and ``bTRUE``).
LOGICAL_LEVELS = ("FALSE", "TRUE")
#: How a categorical factor becomes columns: R's default contrasts, a column per level, or ``contr.sum``.
CODINGS = ("treatment", "full", "sum")

_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "I": lambda x: x, "log": np.log, "log2": np.log2, "log10": np.log10, "exp": np.exp, "sqrt": np.sqrt,
    "abs": np.abs, "np.log": np.log, "np.log2": np.log2, "np.log10": np.log10, "np.exp": np.exp,
    "np.sqrt": np.sqrt,
}
_BINARY: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power,
}
_COMPARE: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


class CodingError(ValueError):
    """A factor cannot be evaluated or coded; the caller adds the formula to the message."""


@dataclass(frozen=True)
class Factor:
    """One evaluated factor: float64 values, or the level of each row (``codes``, −1 where missing)."""

    expr: str
    values: np.ndarray
    levels: tuple[str, ...] | None = None

    @property
    def categorical(self) -> bool:
        return self.levels is not None


def evaluate(expr: str, frame: Mapping[str, pd.Series], rows: int) -> Factor:
    """The factor ``expr`` (already checked against the whitelist) over ``rows`` rows of the columns ``frame``."""
    if expr in frame:
        return _named(expr, frame[expr])
    body = _syntax(expr)
    if isinstance(body, ast.Call) and _called(body) == "C":
        inner = body.args[0]
        if isinstance(inner, ast.Name) and inner.id in frame:
            named = _named(inner.id, frame[inner.id])
            return Factor(expr, named.values, named.levels) if named.categorical else _categorical(expr, named.values)
        return _categorical(expr, _broadcast(_value(inner, frame), rows))
    values = _broadcast(_value(body, frame), rows)
    if values.dtype.kind in "OUS":
        return _categorical(expr, values)
    return Factor(expr, values.astype(np.float64))


@functools.lru_cache(maxsize=4096)
def _syntax(expr: str) -> ast.expr:
    """The parsed factor (a page refits on every rerun; the tree is only read)."""
    return ast.parse(expr, mode="eval").body


def _named(name: str, column: pd.Series) -> Factor:
    """A column the formula names as it is: text and logicals are categorical, numbers numeric."""
    if pd.api.types.is_bool_dtype(column.dtype):
        return Factor(name, column.to_numpy(dtype=np.int64), LOGICAL_LEVELS)
    if isinstance(column.dtype, pd.CategoricalDtype):
        return Factor(name, column.cat.codes.to_numpy(dtype=np.int64), tuple(str(c) for c in column.cat.categories))
    return Factor(name, column.to_numpy(dtype=np.float64))


def _categorical(expr: str, values: np.ndarray) -> Factor:
    """Levels sorted as R's ``factor()`` sorts them; integral numbers read as integers."""
    if values.dtype.kind == "f":
        finite = values[np.isfinite(values)]
        if finite.size and np.all(np.abs(finite) <= 2**53) and np.all(finite == np.trunc(finite)):
            missing = np.isnan(values)
            codes_of = np.where(missing, 0, values).astype(np.int64)
            levels, codes = np.unique(codes_of[~missing], return_inverse=True)
            out = np.full(len(values), -1, dtype=np.int64)
            out[~missing] = codes
            return Factor(expr, out, tuple(str(v) for v in levels.tolist()))
    categories = pd.Categorical(values)
    return Factor(expr, np.asarray(categories.codes, dtype=np.int64), tuple(str(c) for c in categories.categories))


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else ""


def _broadcast(value: Any, n: int) -> np.ndarray:
    array = np.asarray(value)
    return np.broadcast_to(array, (n,)) if array.ndim == 0 else array


def _value(node: ast.AST, frame: Mapping[str, pd.Series]) -> Any:
    """An expression's value over the rows: numbers as float64, a logical column as 0/1, text as text."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else np.float64(cast(float, node.value))  # check(): numbers
    if isinstance(node, ast.Name):
        column = frame[node.id]
        if isinstance(column.dtype, pd.CategoricalDtype):
            return np.asarray(column.astype(object))
        return column.to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](_number(node.left, frame), _number(node.right, frame))
        if isinstance(node, ast.UnaryOp):
            operand = _value(node.operand, frame)
            if isinstance(node.op, ast.Not):
                return np.logical_not(operand)
            return -_number(node.operand, frame) if isinstance(node.op, ast.USub) else _number(node.operand, frame)
        if isinstance(node, ast.Compare):
            result: Any = True
            left = _value(node.left, frame)
            for op, comparator in zip(node.ops, node.comparators):
                right = _value(comparator, frame)
                result = np.logical_and(result, _COMPARE[type(op)](left, right))
                left = right
            return result
        if isinstance(node, ast.Call) and _called(node) in _FUNCTIONS:
            return _FUNCTIONS[_called(node)](_number(node.args[0], frame))
    if isinstance(node, ast.Call) and _called(node) == "C":
        raise CodingError("C(...) must be a whole factor, not part of an expression")
    raise CodingError(f"{brief(ast.unparse(node), 40)} cannot be evaluated in a formula "
                      "(and, or and if are Python; a formula term computes numbers)")


def _number(node: ast.AST, frame: Mapping[str, pd.Series]) -> Any:
    value = _value(node, frame)
    array = np.asarray(value)
    if array.dtype.kind in "OUS":
        raise CodingError(f"arithmetic on text ({brief(ast.unparse(node), 40)})")
    return value if array.dtype.kind == "f" else np.asarray(value, dtype=np.float64)


def full_coding(terms: Sequence[Sequence[str]], categorical: Container[str], intercept: bool) -> list[set[str]]:
    """Per term (the intercept left out, in R's order), the categorical factors R codes with a column per
    level instead of contrasts (``terms.formula``'s TermCode, then ``model.matrix``): a factor f of a term T
    when T without f is not empty and lies inside no term before T; and, without an intercept, the first
    categorical factor of the first term that has one (``y ~ 0 + b + x`` codes ``bFALSE`` and ``bTRUE``)."""
    full: list[set[str]] = []
    for i, term in enumerate(terms):
        rest = [set(term) - {f} for f in term]
        full.append({f for f, others in zip(term, rest) if f in categorical and others
                     and not any(others <= set(before) for before in terms[:i])})
    if not intercept:
        first = next(((i, f) for i, term in enumerate(terms) for f in term if f in categorical), None)
        if first is not None:
            full[first[0]].add(first[1])
    return full


def factor_columns(factor: Factor, coding: str) -> list[tuple[str, np.ndarray]]:
    """The named columns of one factor: itself if numeric, else its dummies or contrasts."""
    if factor.levels is None:
        return [(factor.expr, factor.values)]
    codes, levels = factor.values, factor.levels
    missing = codes < 0
    columns = []
    if coding == "sum":
        last = len(levels) - 1
        for j, level in enumerate(levels[:-1]):
            columns.append((f"{factor.expr}[S.{level}]", (codes == j).astype(np.float64) - (codes == last)))
    else:
        chosen = range(len(levels)) if coding == "full" else range(1, len(levels))
        prefix = "" if coding == "full" else "T."
        columns = [(f"{factor.expr}[{prefix}{levels[j]}]", (codes == j).astype(np.float64)) for j in chosen]
    if missing.any():
        for _, column in columns:
            column[missing] = np.nan
    return columns


def term_columns(factors: Sequence[list[tuple[str, np.ndarray]]]) -> list[tuple[str, np.ndarray]]:
    """The row-wise product of the factors' columns, the first factor varying fastest (R's order)."""
    out = []
    for reverse in itertools.product(*reversed(factors)):
        parts = reverse[::-1]
        values = parts[0][1]
        for _, column in parts[1:]:
            values = values * column
        out.append((":".join(name for name, _ in parts), values))
    return out

