"""Model formulas, the user-facing model language (``Y ~ x1 + x3 + I(x8^2) + x1:x3``).

R's formula language (:mod:`engine.model.parser`: R's algebra and term order, so Type I ANOVA rows come out
as R prints them) over R's ``model.matrix`` (:mod:`engine.model.coding`: which factors get contrasts and which
a column per level, a logical column as a two-level factor ``bFALSE``, ``bTRUE``). ``^`` inside ``I(...)``
means a power, as in R. Every factor expression is checked by the whitelist of :mod:`engine.space.expr`
before anything evaluates it, so a formula is never code, and the formula's size is bounded before it is
expanded: its length, the interaction power of ``(a + b)^n`` and the number of terms it can expand to.
Numeric columns are evaluated as float64, R's doubles, so ``I(x^20)`` is R's number, not an int64 that
wrapped around.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import brief
from engine.model.coding import CODINGS, CodingError, evaluate, factor_columns, full_coding, term_columns
from engine.model.parser import INTERCEPT, MAX_POWER, MAX_TERMS, FormulaError, Term, read
from engine.space.expr import FORMULA_FUNCTIONS, ExpressionError, check

__all__ = ["MAX_FORMULA_LENGTH", "MAX_POWER", "MAX_TERMS", "FormulaError", "ModelMatrix", "ParsedFormula",
           "formula_text", "model_frame", "model_matrix", "normalize", "parse"]

#: Longest formula, in characters.
MAX_FORMULA_LENGTH = 10_000

_I_CALL = re.compile(r"\bI\(")


def _label(formula: str) -> str:
    return f"formula {brief(formula.strip())}"


def normalize(formula: str) -> str:
    """Rewrite R spellings into Python's where a factor is Python text: ``^`` inside ``I(...)`` becomes ``**``."""
    if not isinstance(formula, str) or not formula.strip():
        raise FormulaError("formula: empty")
    text = formula.strip()
    if len(text) > MAX_FORMULA_LENGTH:
        raise FormulaError(f"{_label(formula)}: longer than {MAX_FORMULA_LENGTH:,} characters")
    out, i = [], 0
    while i < len(text):
        match = _I_CALL.search(text, i)
        if not match:
            out.append(text[i:])
            break
        out.append(text[i : match.end()])
        depth, j = 1, match.end()
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        if depth:
            raise FormulaError(f"{_label(formula)}: unbalanced parenthesis in I(...)")
        out.append(text[match.end() : j].replace("^", "**"))
        i = j
    return "".join(out)


@dataclass(frozen=True)
class ParsedFormula:
    """A checked formula: its response (or None), its terms in R order (each a label, its factors and the
    columns they read), and the columns it uses."""

    text: str
    response: str | None
    terms: tuple[str, ...]
    variables: frozenset[str]
    has_intercept: bool
    factors: tuple[Term, ...] = ()
    term_variables: tuple[frozenset[str], ...] = ()

    @property
    def rhs(self) -> str:
        return " + ".join(self.terms) if self.terms else "1"


def formula_text(response: str, terms: Sequence[str], intercept: bool = True) -> str:
    """``response ~ terms`` (``~ 1`` when none is left; ``- 1`` kept from a model without intercept)."""
    return f"{response} ~ " + (" + ".join(terms) + ("" if intercept else " - 1") if terms else "1")


def parse(formula: str, columns: Iterable[str]) -> ParsedFormula:
    """Parse ``formula`` against the available ``columns`` and check every factor expression."""
    text = normalize(formula)
    label = _label(formula)
    columns = list(columns)
    parts = read(text, label)
    response = None
    variables: set[str] = set()
    if parts.lhs is not None:
        if len(parts.lhs) != 1 or len(parts.lhs[0]) != 1 or parts.lhs[0] == (INTERCEPT,):
            raise FormulaError(f"{label}: the response must be a single column")
        response = parts.lhs[0][0]
        variables |= _factor_columns(response, columns, f"{label}: response")
    terms = tuple(term for term in parts.rhs if term != (INTERCEPT,))
    reads = {f: _factor_columns(f, columns, f"{label}: term") for term in terms for f in term}  # in R's order
    term_variables = tuple(frozenset().union(*(reads[f] for f in term)) for term in terms)
    variables = variables.union(*reads.values())
    return ParsedFormula(formula.strip(), response, tuple(":".join(t) for t in terms), frozenset(variables),
                         len(terms) < len(parts.rhs), terms, term_variables)


def _factor_columns(expr: str, columns: list[str], what: str) -> set[str]:
    """The columns one factor expression reads; it must pass the whitelist and read at least one."""
    try:
        used = check(expr, columns, FORMULA_FUNCTIONS, what=what)  # screened first, inside
    except ExpressionError as exc:
        raise FormulaError(str(exc)) from None
    if not used:
        raise FormulaError(f"{what} {brief(expr)} uses no column (R refuses a constant term)")
    return used


@dataclass(frozen=True)
class ModelMatrix:
    """The numeric model matrix of a formula over a frame, with the columns of each term (``"1"`` the intercept's)."""

    X: np.ndarray
    columns: tuple[str, ...]
    term_slices: dict[str, slice]
    y: np.ndarray | None
    formula: ParsedFormula

    @property
    def k(self) -> int:
        return int(self.X.shape[1])


def model_matrix(formula: str | ParsedFormula, data: pd.DataFrame, contrasts: str = "treatment") -> ModelMatrix:
    """R's ``model.matrix`` (raw values) for ``formula`` over ``data``: categorical factors coded by
    ``contrasts`` (``treatment``, R's default, or ``sum``, ``contr.sum``) where R codes them by contrasts,
    and by a column per level where R does (:func:`engine.model.coding.full_coding`)."""
    if contrasts not in CODINGS or contrasts == "full":
        raise FormulaError(f"contrasts {contrasts!r}: expected 'treatment' or 'sum'")
    parsed = formula if isinstance(formula, ParsedFormula) else parse(formula, data.columns)
    frame = model_frame(data, parsed.variables)
    try:
        return _build(parsed, frame, contrasts)
    except CodingError as exc:
        raise FormulaError(f"{_label(parsed.text)}: {exc}") from None


def _build(parsed: ParsedFormula, frame: pd.DataFrame, contrasts: str) -> ModelMatrix:
    n = len(frame)
    columns_of = {name: frame[name] for name in frame.columns}  # one lookup each: a frame's is ~0.1 ms
    factors = {f: evaluate(f, columns_of, n) for term in parsed.factors for f in term}
    categorical = {f for f, factor in factors.items() if factor.categorical}
    full = full_coding(parsed.factors, categorical, parsed.has_intercept)
    names: list[str] = []
    blocks: list[np.ndarray] = []
    slices: dict[str, slice] = {}
    if parsed.has_intercept:
        names.append("Intercept")
        blocks.append(np.ones(n))
        slices[INTERCEPT] = slice(0, 1)
    for label, term, full_here in zip(parsed.terms, parsed.factors, full):
        columns = term_columns([factor_columns(factors[f], "full" if f in full_here else contrasts) for f in term])
        slices[label] = slice(len(names), len(names) + len(columns))
        names += [name for name, _ in columns]
        blocks += [values for _, values in columns]
    X = np.column_stack(blocks) if blocks else np.empty((n, 0))
    y = None
    if parsed.response is not None:
        response = evaluate(parsed.response, columns_of, n)
        if response.categorical:
            raise CodingError(f"response {brief(parsed.response, 40)} is not numeric")
        y = np.asarray(response.values, dtype=float)
    return ModelMatrix(X=np.asarray(X, dtype=float), columns=tuple(names), term_slices=slices, y=y, formula=parsed)


def model_frame(data: pd.DataFrame, variables: Container[str]) -> pd.DataFrame:
    """Only the used columns; numbers as float64 (R's doubles: ``I(x^20)`` cannot wrap around in int64),
    booleans as booleans (R's logicals, also when missing values left them in an object column), strings
    as categoricals."""
    frame = data.loc[:, [c for c in data.columns if c in variables]].copy()
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_integer_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            frame[name] = col.astype(float)
        elif col.dtype == object and pd.api.types.infer_dtype(col, skipna=False) == "boolean":
            frame[name] = col.astype(bool)
        elif col.dtype == object or pd.api.types.is_string_dtype(col):
            frame[name] = pd.Categorical(col.astype(str))
    return frame
