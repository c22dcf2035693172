"""Model terms with R's names, so every table reads as R prints it and compares with R's output.

The model matrix (:mod:`engine.model.formula`) labels terms in Python's spelling (``I(x8 ** 2)``,
``I(1 / x)``) and levels in brackets (``C(v)[T.2]`` for a contrast, ``f[hi]`` where a factor is coded in full,
without intercept); R deparses them as ``I(x8^2)``, ``I(1/x)``, ``C(v)2``, ``fhi``, and a boolean column is
R's logical, whose dummies are ``load_overlapFALSE`` and ``load_overlapTRUE`` (``load_overlap[T.TRUE]`` in
the matrix). Every table, page
and export uses these R names. (R 4.2's ``read.csv`` keeps lowercase ``true``/``false`` as strings, so
R itself names that column ``load_overlaptrue``; Tunelab reads them as booleans.) The helpers here
translate, and :class:`Term` keeps, for each term, the factor expressions (for car's containment rule)
and the data columns it uses (for decisions).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from engine.model.formula import ModelMatrix

#: R's ``symnum`` cutpoints for significance stars; intervals are right-closed.
STAR_CUTPOINTS = ((0.001, "***"), (0.01, "**"), (0.05, "*"), (0.1, "."))

_LEVEL = re.compile(r"^(.*)\[(?:T\.)?(.*)\]$")


def stars(p: float | None) -> str | None:
    """R's significance code for ``p`` (``None`` where p is missing, one space above 0.1)."""
    if p is None or not math.isfinite(p):
        return None
    for cut, symbol in STAR_CUTPOINTS:
        if p <= cut:
            return symbol
    return " "


def split_factors(label: str) -> tuple[str, ...]:
    """``'C(a):I(1 / b)'`` -> ``('C(a)', 'I(1 / b)')``: split on ``:`` outside brackets.

    Quotes inside ``(...)`` are Python strings (``I(opt == 'a:b')``); a level's ``[T.…]`` is opaque
    up to its ``]``, whatever characters the level holds.
    """
    parts: list[str] = []
    opened: list[str] = []
    start, quote = 0, ""
    for i, char in enumerate(label):
        top = opened[-1] if opened else ""
        if quote:
            quote = "" if char == quote else quote
        elif top == "[":
            if char == "]":
                opened.pop()
        elif char in "'\"" and top == "(":
            quote = char
        elif char in "([":
            opened.append(char)
        elif char == ")" and top == "(":
            opened.pop()
        elif char == ":" and not opened:
            parts.append(label[start:i])
            start = i + 1
    parts.append(label[start:])
    return tuple(p.strip() for p in parts)


def r_expression(expr: str) -> str:
    """R's deparse spacing: ``x ** 2`` -> ``x^2``, ``1 / x`` -> ``1/x`` (``+ - *`` keep spaces)."""
    return re.sub(r"\s*\*\*\s*", "^", re.sub(r"\s*/\s*", "/", expr))


def term_display(label: str) -> str:
    """R's row name for a model-matrix term label."""
    return ":".join(r_expression(f) for f in split_factors(label))


def column_display(column: str) -> str:
    """R's coefficient name for a model-matrix column other than the intercept's."""
    out = []
    for part in split_factors(column):
        match = _LEVEL.match(part)
        out.append(r_expression(match.group(1)) + match.group(2) if match else r_expression(part))
    return ":".join(out)


def column_names(columns: Sequence[str], term_slices: Mapping[str, slice]) -> list[str]:
    """R's coefficient names of a model matrix's columns. The intercept's is known by its term (``1``), not
    its name: the matrix calls it ``Intercept``, as a data column may be called."""
    names = [column_display(c) for c in columns]
    if "1" in term_slices:
        names[term_slices["1"].start] = "(Intercept)"
    return names


def is_categorical(factor: str, data: pd.DataFrame) -> bool:
    """Whether a factor expression is coded with contrasts: ``C(...)`` or a non-numeric column."""
    if factor.startswith("C("):
        return True
    if factor in data.columns:
        dtype = data[factor].dtype
        return not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
    return False


@dataclass(frozen=True)
class Term:
    """One model term: matrix label, R name, factor expressions, data columns, matrix columns."""

    label: str
    display: str
    factors: tuple[str, ...]
    variables: frozenset[str]
    columns: slice

    def contains(self, other: Term) -> bool:
        """car's ``relatives`` rule: every factor of ``other`` is a factor of this term."""
        return self is not other and set(other.factors) <= set(self.factors)


def model_terms(matrix: ModelMatrix) -> tuple[Term, ...]:
    """The non-intercept terms of a model matrix, in matrix (= R) order, with what its formula's parse found
    (factors and the columns they read: checked once, there)."""
    parsed = matrix.formula
    return tuple(Term(label, term_display(label), factors, variables, matrix.term_slices[label])
                 for label, factors, variables in zip(parsed.terms, parsed.factors, parsed.term_variables))
