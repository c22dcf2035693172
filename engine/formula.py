"""Model formulas, the user-facing model language (``Y ~ x1 + x3 + I(x8^2) + x1:x3``).

One formula engine is used everywhere (formulaic), with R's term order: terms of lower degree first,
the written order kept within a degree (R's ``terms()``), so Type I ANOVA rows come out as R prints
them. ``^`` inside ``I(...)`` means a power, as in R. Every factor expression is checked by the
whitelist of :mod:`engine.expr` before formulaic evaluates anything, so a formula is never code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from formulaic import Formula, model_matrix as _formulaic_model_matrix
from formulaic.errors import FormulaicError

from engine.expr import FORMULA_FUNCTIONS, ExpressionError, check


class FormulaError(ValueError):
    """A formula cannot be used with the data at hand; the message says why in one line."""


_I_CALL = re.compile(r"\bI\(")


def normalize(formula: str) -> str:
    """Rewrite R spellings into formulaic's: ``^`` inside ``I(...)`` becomes ``**``."""
    if not isinstance(formula, str) or not formula.strip():
        raise FormulaError("formula: empty")
    out, i = [], 0
    text = formula.strip()
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
            raise FormulaError(f"formula {formula!r}: unbalanced parenthesis in I(...)")
        out.append(text[match.end() : j].replace("^", "**"))
        i = j
    return "".join(out)


@dataclass(frozen=True)
class ParsedFormula:
    """A checked formula: its response (or None), its terms in R order, and the columns it uses."""

    text: str
    response: str | None
    terms: tuple[str, ...]
    variables: frozenset[str]
    has_intercept: bool
    _formula: Formula = field(repr=False, compare=False)

    @property
    def rhs(self) -> str:
        return " + ".join(self.terms) if self.terms else "1"


def parse(formula: str, columns) -> ParsedFormula:
    """Parse ``formula`` against the available ``columns`` and check every factor expression."""
    text = normalize(formula)
    columns = list(columns)
    try:
        parsed = Formula(text, _ordering="degree")
    except (FormulaicError, SyntaxError, ValueError) as exc:
        raise FormulaError(f"formula {formula!r}: {str(exc).splitlines()[0]}") from None
    rhs = parsed.rhs if hasattr(parsed, "rhs") else parsed
    response = None
    if hasattr(parsed, "lhs"):
        lhs_terms = [str(t) for t in parsed.lhs]
        if len(lhs_terms) != 1:
            raise FormulaError(f"formula {formula!r}: the response must be a single column")
        response = lhs_terms[0]
    variables: set[str] = set()
    terms: list[str] = []
    intercept = False
    for term in rhs:
        name = str(term)
        if name == "1":
            intercept = True
            continue
        for factor in term.factors:
            try:
                variables |= check(factor.expr, columns, FORMULA_FUNCTIONS, what="formula term")
            except ExpressionError as exc:
                raise FormulaError(str(exc).replace("formula term", f"formula {formula!r}: term", 1)) from None
        terms.append(name)
    if response is not None:
        try:
            variables |= check(response, columns, FORMULA_FUNCTIONS, what="response")
        except ExpressionError as exc:
            raise FormulaError(f"formula {formula!r}: {exc}") from None
    return ParsedFormula(formula.strip(), response, tuple(terms), frozenset(variables), intercept, parsed)


@dataclass(frozen=True)
class ModelMatrix:
    """The numeric model matrix of a formula over a frame, with the columns of each term."""

    X: np.ndarray
    columns: tuple[str, ...]
    term_slices: dict[str, slice]
    y: np.ndarray | None
    formula: ParsedFormula

    @property
    def k(self) -> int:
        return self.X.shape[1]


def model_matrix(formula: str | ParsedFormula, data: pd.DataFrame) -> ModelMatrix:
    """Build R's ``model.matrix`` (treatment coding, raw values) for ``formula`` over ``data``."""
    parsed = formula if isinstance(formula, ParsedFormula) else parse(formula, data.columns)
    frame = _prepare(data, parsed.variables | ({parsed.response} & set(data.columns) if parsed.response else set()))
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            mm = _formulaic_model_matrix(parsed._formula, frame, na_action="ignore")
    except (FormulaicError, ValueError, TypeError, KeyError, ZeroDivisionError) as exc:
        raise FormulaError(f"formula {parsed.text!r}: {str(exc).splitlines()[0]}") from None
    rhs = mm.rhs if hasattr(mm, "rhs") else mm
    y = None
    if parsed.response is not None and hasattr(mm, "lhs"):
        y = np.asarray(mm.lhs, dtype=float).ravel()
    slices = {str(term): sl for term, sl in rhs.model_spec.term_slices.items()}
    return ModelMatrix(
        X=np.asarray(rhs, dtype=float),
        columns=tuple(str(c) for c in rhs.columns),
        term_slices=slices,
        y=y,
        formula=parsed,
    )


def _prepare(data: pd.DataFrame, variables) -> pd.DataFrame:
    """Only the used columns; booleans as 0/1 (R's ``xTRUE`` dummy), strings as categoricals."""
    frame = data.loc[:, [c for c in data.columns if c in variables]].copy()
    for name in frame.columns:
        col = frame[name]
        if col.dtype == bool:
            frame[name] = col.astype(float)
        elif col.dtype == object or pd.api.types.is_string_dtype(col):
            frame[name] = pd.Categorical(col.astype(str))
    return frame
