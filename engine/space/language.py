"""The expression language's vocabulary, shared by checking (:mod:`engine.space.expr`) and evaluating
(:mod:`engine.space.evaluate`) an expression: its operators, its one error, and how a refusal writes a number.
"""

from __future__ import annotations

import ast
from typing import Any

from engine.errors import brief
from engine.io.jsonable import plain


class ExpressionError(ValueError):
    """A user expression was rejected; the message names the offending token."""


#: float64 holds every integer up to 2**53 exactly; integer results beyond it are verified.
EXACT_INTEGERS = 2**53

#: The operators an expression may use, each by the numpy function that evaluates it (:mod:`engine.space.evaluate`).
BINARY_OPERATORS: dict[type[ast.AST], str] = {
    ast.Add: "add",
    ast.Sub: "subtract",
    ast.Mult: "multiply",
    ast.Div: "true_divide",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "mod",
    ast.Pow: "power",
}
COMPARISONS: dict[type[ast.AST], str] = {
    ast.Eq: "equal",
    ast.NotEq: "not_equal",
    ast.Lt: "less",
    ast.LtE: "less_equal",
    ast.Gt: "greater",
    ast.GtE: "greater_equal",
}
UNARY_OPERATORS: dict[type[ast.AST], str] = {ast.USub: "negative", ast.UAdd: "positive", ast.Not: "logical_not"}

#: How a message writes an operator, allowed or refused.
OP_SYMBOLS: dict[type[ast.AST], str] = {
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@", ast.Invert: "~", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}


def number_text(value: Any) -> str:
    """A number as a person writes it: ``10000000000`` rather than ``1e10`` for integral floats."""
    value = plain(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return brief(value, 40)
