"""Fuzz the formula language: any text parses and builds a model matrix over a small frame, or is
refused in one line (a FormulaError), quickly.

Formula-shaped text combines columns (one named like a Python keyword), ``I(...)`` and function
calls over the constraint grammar's expressions, every formula operator (``+ - * / : ^ ** %in% |
~``), interaction powers from -2 to 60, and long unary chains and deep parentheses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import event, given
from hypothesis import strategies as st

from engine.model.formula import model_matrix, parse
from tests.fuzz.clean import parses_or_refuses
from tests.fuzz.test_fuzz_constraint import expressions, numbers, texts, time_limit

FRAME = pd.DataFrame({
    "t": [1.5, 2.0, 0.5, 3.0, 2.5, 1.0],
    "x": np.array([1, 2, 3, 4, 5, 6], dtype=np.int64),
    "y": [0.5, -1.0, 2.0, 8.0, 0.0, 3.5],
    "z": [True, False, True, True, False, False],
    "c": ["a", "b", "a:b", "c", "b", "a"],
    "lambda": np.array([1, 1, 2, 2, 3, 3], dtype=np.int64),
})

formula_atoms = st.one_of(
    st.sampled_from(["x", "y", "z", "c", "t", "1", "0", "-1", "lambda", "`x`", "`lambda`", "w", ".", "2"]),
    expressions.map(lambda e: f"I({e})"),
    st.tuples(st.sampled_from(["C", "log", "sqrt", "exp", "np.log", "abs", "poly", "I"]), expressions).map(
        lambda t: f"{t[0]}({t[1]})"
    ),
    expressions.map(lambda e: "{" + e + "}"),
)
FORMULA_OPERATORS = ("+", "-", "*", "/", ":", "^", "**", "%in%", "|", "~", "in")


def _grow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(FORMULA_OPERATORS), children).map(" ".join),
        st.tuples(children, st.sampled_from(["^", "**"]), st.integers(-2, 60).map(str) | numbers).map(" ".join),
        children.map(lambda e: f"({e})"),
        st.tuples(st.sampled_from(["-", "+"]), children).map("".join),
        st.tuples(st.integers(2, 3000), st.sampled_from(["-", "+"]), children).map(lambda t: t[1] * t[0] + t[2]),
        st.tuples(st.integers(2, 3000), children).map(lambda t: "(" * t[0] + t[1] + ")" * t[0]),
    )


RESPONSES = ("", "t ~ ", "~ ", "t + x ~ ", "log(t) ~ ", "lambda ~ ", "I(t^2) ~ ")
right_hand_sides = st.recursive(formula_atoms, _grow, max_leaves=8)
formulas = st.one_of(
    st.tuples(st.sampled_from(RESPONSES), right_hand_sides).map("".join),
    st.sampled_from(["t ~", "~", "t ~ ()", "t ~ 0", "t ~ -1", "~ 1"]),
)


@given(formula=st.one_of(formulas, texts))
def test_formula_parses_and_builds_or_refuses(formula):
    with time_limit():
        parsed = parses_or_refuses(lambda: parse(formula, FRAME.columns))
        if parsed is None:
            event("refused at parse")
            return
        matrix = parses_or_refuses(lambda: model_matrix(parsed, FRAME))
        event("refused at build" if matrix is None else "built")
        if matrix is not None:
            assert matrix.X.dtype == float and matrix.X.shape[0] == len(FRAME)
