"""A safe, vectorised evaluator for the small expression language of constraints and formulas.

User text (constraints such as ``lws_y <= threads_number``, formula terms such as ``I(1/x)``) is
parsed with Python's ``ast`` and checked against a whitelist *before* anything is evaluated: only
arithmetic, comparisons, boolean logic, numeric literals, known column names and a handful of pure
functions pass. Evaluation walks the checked tree over numpy arrays, so one constraint filters two
million configurations in a single pass and no user text ever reaches ``eval``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np


class ExpressionError(ValueError):
    """A user expression was rejected; the message names the offending token."""


_BINOPS: dict[type, Callable] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
}
_CMPOPS: dict[type, Callable] = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}
_UNARY: dict[type, Callable] = {ast.USub: np.negative, ast.UAdd: np.positive, ast.Not: np.logical_not}

#: Functions a constraint may call. Pure, elementwise, no side effects.
CONSTRAINT_FUNCTIONS: dict[str, Callable] = {
    "min": np.minimum,
    "max": np.maximum,
    "abs": np.abs,
}
#: Functions a formula term may call (``I`` and ``C`` are the formula library's own markers).
FORMULA_FUNCTIONS: frozenset[str] = frozenset(
    {"I", "C", "log", "log2", "log10", "exp", "sqrt", "abs", "np.log", "np.log2", "np.log10", "np.exp", "np.sqrt"}
)

_OP_SYMBOL = {
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@", ast.Invert: "~", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
}


def _token(node: ast.AST) -> str:
    """A short, human-readable name for a rejected syntax node."""
    if isinstance(node, ast.Attribute):
        return f"attribute access '.{node.attr}'"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"call to '{node.func.id}'"
    if isinstance(node, ast.Constant):
        return f"literal {node.value!r}"
    if type(node) in _OP_SYMBOL:
        return f"operator '{_OP_SYMBOL[type(node)]}'"
    return f"'{type(node).__name__}'"


def _parse(text: str, what: str) -> ast.Expression:
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"{what}: empty expression")
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{what} {text!r}: syntax error at column {exc.offset}") from None


def _dotted(node: ast.AST) -> str | None:
    """'np.log' for Attribute(Name('np'), 'log'), the name for a Name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def check(
    text: str,
    names: Iterable[str],
    functions: Iterable[str] = CONSTRAINT_FUNCTIONS,
    what: str = "expression",
) -> set[str]:
    """Validate ``text`` and return the column names it uses.

    Raises :class:`ExpressionError` naming the first token that is not allowed: an unknown name,
    attribute access, a call to anything but the whitelisted functions, strings, subscripts,
    lambdas, comprehensions and every other construct outside arithmetic and logic.
    """
    tree = _parse(text, what)
    names = set(names)
    functions = set(functions)
    used: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Expression):
            visit(node.body)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str)):  # bool is an int; str for categorical levels
                raise ExpressionError(f"{what} {text!r}: {_token(node)} is not allowed")
        elif isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                return
            if node.id not in names:
                raise ExpressionError(f"{what} {text!r}: unknown name '{node.id}'")
            used.add(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ExpressionError(f"{what} {text!r}: {_token(node.op)} is not allowed")
            visit(node.left)
            visit(node.right)
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise ExpressionError(f"{what} {text!r}: {_token(node.op)} is not allowed")
            visit(node.operand)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                visit(value)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _CMPOPS:
                    raise ExpressionError(f"{what} {text!r}: {_token(op)} is not allowed")
            visit(node.left)
            for comparator in node.comparators:
                visit(comparator)
        elif isinstance(node, ast.IfExp):
            visit(node.test)
            visit(node.body)
            visit(node.orelse)
        elif isinstance(node, ast.Call):
            fname = _dotted(node.func)
            if fname is None or fname not in functions:
                label = fname or _token(node.func)
                raise ExpressionError(f"{what} {text!r}: call to '{label}' is not allowed")
            if node.keywords:
                raise ExpressionError(f"{what} {text!r}: keyword arguments are not allowed")
            for arg in node.args:
                visit(arg)
        else:
            raise ExpressionError(f"{what} {text!r}: {_token(node)} is not allowed")

    visit(tree)
    return used


@dataclass(frozen=True)
class Expression:
    """A checked expression, ready to evaluate over columns of equal length."""

    text: str
    names: frozenset[str]
    _tree: ast.Expression

    @classmethod
    def compile(cls, text: str, names: Iterable[str], what: str = "constraint") -> "Expression":
        used = check(text, names, CONSTRAINT_FUNCTIONS, what)
        return cls(text.strip(), frozenset(used), _parse(text, what))

    def evaluate(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Evaluate over arrays (one per name); scalars broadcast. Division by zero yields inf/nan."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.asarray(_eval(self._tree.body, columns))


def _eval(node: ast.AST, cols: Mapping[str, np.ndarray]):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id == "True":
            return True
        if node.id == "False":
            return False
        return cols[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, cols), _eval(node.right, cols)
        if isinstance(node.op, (ast.Mod, ast.FloorDiv)):
            left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, cols))
    if isinstance(node, ast.BoolOp):
        combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        result = np.asarray(_eval(node.values[0], cols), dtype=bool)
        for value in node.values[1:]:
            result = combine(result, np.asarray(_eval(value, cols), dtype=bool))
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, cols)
        result = True
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, cols)
            result = np.logical_and(result, _CMPOPS[type(op)](left, right))
            left = right
        return result
    if isinstance(node, ast.IfExp):
        return np.where(_eval(node.test, cols), _eval(node.body, cols), _eval(node.orelse, cols))
    if isinstance(node, ast.Call):
        fn = CONSTRAINT_FUNCTIONS[node.func.id]
        args = [_eval(a, cols) for a in node.args]
        if fn is np.abs:
            return np.abs(*args)
        out = args[0]
        for arg in args[1:]:
            out = fn(out, arg)
        return out
    raise ExpressionError(f"cannot evaluate {_token(node)}")  # unreachable after check()
