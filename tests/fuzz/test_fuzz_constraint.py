"""Fuzz the constraint language: any text compiles and evaluates, or is refused in one line, quickly.

Grammar-shaped text (names, numbers from 0 to 400 digits, every operator, calls with 0..3 arguments,
parentheses, long unary chains and deep nesting) reaches the interesting paths; arbitrary text
reaches the parser's corners. What compiles is also evaluated over small int64, float and bool
columns and compared, row by row, with Python's own arithmetic (a reference walk of the same checked
tree with Python numbers, never ``eval``): a constraint means what Python makes of it, or is refused.
The grammar and the per-example time limit are shared with the formula and term-builder targets.
"""

from __future__ import annotations

import ast
import math
import operator
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from engine.space.expr import Expression
from tests.fuzz.clean import parses_or_refuses

NAMES = ("x", "y", "z")
#: Seconds one example may take: the bounds make every example fast, and a hang fails here.
EXAMPLE_SECONDS = 10

numbers = st.one_of(
    st.integers(0, 70).map(str),
    st.integers(0, 2**70).map(str),
    st.integers(1, 400).map(lambda n: "9" * n),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0.5", "1e308", "1e400", "2**53", "2**62", "0x10", "1_000", "1j"]),
)
atoms = st.one_of(
    st.sampled_from(NAMES),
    numbers,
    st.sampled_from(["True", "False", "None", "'a'", '"O3"', "lambda", "abs", "x.real", "..."]),
)
BINARY = ("+", "-", "*", "/", "//", "%", "**", "^", "<", "<=", "==", "!=", ">", ">=",
          "and", "or", "&", "|", "<<", "in", "is", "not in", "@")
UNARY = ("-", "+", "not ", "~")
FUNCTIONS = ("min", "max", "abs", "log", "exp", "sqrt", "I", "C", "np.log", "open", "__import__")


def _grow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(BINARY), children).map(" ".join),
        st.tuples(st.sampled_from(UNARY), children).map("".join),
        children.map(lambda e: f"({e})"),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} if {t[1]} else {t[2]}"),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(children, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(st.integers(2, 2000), st.sampled_from(UNARY), children).map(lambda t: t[1] * t[0] + t[2]),
        st.tuples(st.integers(2, 2000), children).map(lambda t: "(" * t[0] + t[1] + ")" * t[0]),
        st.tuples(children, st.integers(2, 60)).map(lambda t: "**".join([t[0]] * t[1])),
    )


#: Expression-shaped text: what a person (or an attacker) types into a constraint or a formula term.
expressions = st.recursive(atoms, _grow, max_leaves=12)

ALLOWED_BINARY = ("+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", ">=", "and", "or")
small_numbers = st.one_of(
    st.integers(0, 9).map(str), st.sampled_from(["0.5", "2.5", "1e3", "2**53", "2**62", "3**33", "True", "'a'"])
)


def _grow_allowed(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(ALLOWED_BINARY), children).map(" ".join),
        st.tuples(st.sampled_from(["-", "+", "not "]), children).map("".join),
        children.map(lambda e: f"({e})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(children, min_size=2, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        children.map(lambda e: f"abs({e})"),
    )


#: Text within the whitelist, so that most of it compiles and is compared with Python row by row.
allowed_expressions = st.recursive(st.sampled_from(NAMES) | small_numbers, _grow_allowed, max_leaves=8)
#: Arbitrary text, and text over the expression alphabet.
texts = st.one_of(st.text(max_size=300), st.text(alphabet="xyz0129.+-*/%^()<>=!&|~ ,'aeinotr_", max_size=300))


@contextmanager
def time_limit(seconds: float = EXAMPLE_SECONDS) -> Iterator[None]:
    """Fail an example that runs past ``seconds`` (SIGALRM: the main thread, where pytest runs); a timer
    already set (pytest-timeout's, for the whole test) is put back with the time it has left."""

    def expire(signum, frame):
        raise TimeoutError(f"example ran past {seconds} s")

    handler = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))


ints = st.integers(-5, 5) | st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**53, 2**62, -(2**63)])
column_kinds = {
    "int64": st.lists(ints, min_size=4, max_size=4).map(lambda v: np.array(v, dtype=np.int64)),
    "float": st.lists(st.floats() | st.integers(-5, 5).map(float), min_size=4, max_size=4).map(np.array),
    "bool": st.lists(st.booleans(), min_size=4, max_size=4).map(lambda v: np.array(v, dtype=bool)),
}
columns = st.fixed_dictionaries({name: st.one_of(*column_kinds.values()) for name in NAMES})


@given(text=st.one_of(expressions, allowed_expressions, texts), cols=columns)
def test_constraint_compiles_and_evaluates_or_refuses(text, cols):
    with time_limit():
        expr = parses_or_refuses(lambda: Expression.compile(text, NAMES))
        if expr is None:
            event("refused at compile")
            return
        before = {name: col.tobytes() for name, col in cols.items()}
        result = parses_or_refuses(lambda: expr.evaluate(cols))
        assert all(before[name] == col.tobytes() for name, col in cols.items()), "a column was written"
        if result is None:
            event("refused at evaluation")
            return
        assert result.dtype == bool and result.shape in ((), (4,))
        expected = _python_rows(expr, cols)
        event(f"evaluated; rows compared with Python: {4 - expected.count(_UNDEFINED)}")
        for row, python in enumerate(expected):
            if python is not _UNDEFINED:
                assert bool(np.broadcast_to(result, (4,))[row]) == python, (text, row, cols)


# -- Python's meaning, row by row ------------------------------------------------------------------
class _Undefined(Exception):
    """Python raises on this row (or the reference would compute an integer too large to matter)."""


_UNDEFINED = object()
_PY_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_PY_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _python_rows(expr: Expression, cols) -> list:
    """Python's truth of ``expr`` on each row (nan does not hold), or _UNDEFINED where Python raises."""
    out = []
    for row in range(4):
        values = {name: col[row].item() for name, col in cols.items()}
        try:
            value = _python(expr._tree.body, values)
        except (_Undefined, ArithmeticError, TypeError, ValueError):
            out.append(_UNDEFINED)
            continue
        if isinstance(value, complex):
            out.append(_UNDEFINED)
        else:
            out.append(bool(value) and not (isinstance(value, float) and math.isnan(value)))
    return out


def _python(node: ast.AST, values: dict):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _python(node.left, values), _python(node.right, values)
        if isinstance(node.op, ast.Pow):
            return _python_power(left, right)
        return _PY_BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _python(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BoolOp):
        value = _python(node.values[0], values)
        for item in node.values[1:]:
            if bool(value) == isinstance(node.op, ast.Or):
                return value
            value = _python(item, values)
        return value
    if isinstance(node, ast.Compare):
        left = _python(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _python(comparator, values)
            if not _PY_COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _python(node.body if _python(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Call):
        args = [_python(arg, values) for arg in node.args]
        return {"min": min, "max": max, "abs": abs}[node.func.id](*args)
    raise AssertionError(f"unchecked node {type(node).__name__}")


def _python_power(base, exponent):
    """``base ** exponent`` with Python's integers; a float power is left out of the comparison (numpy's
    vectorised pow may differ from libm's in the last bit, as engine.space.expr documents)."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent >= 0:
        if abs(base) > 1 and exponent * abs(base).bit_length() > 5000:
            raise _Undefined  # far beyond float64: the engine refuses it
        return base**exponent
    raise _Undefined
