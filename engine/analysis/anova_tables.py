"""ANOVA tables as R prints them: Type I (``summary(aov)``), Type II and III (``car::Anova``).

* Type I: sequential SS, the squared QR effects of each term's columns in R's term order.
* Type II (car): SS(term) = what the term's columns add to all the columns of the terms that do not
  contain it, aliased columns included: the spans, and so the table, do not depend on the term order
  (which decides only *which* column of an aliased set lm drops), and a term inside the others' span
  gets 0 df and no test, as car prints it.
* Type III (car): the model refitted with sum-to-zero contrasts; SS(term) = what the term's columns
  add to all the other columns, and the residuals are the refit's (the same as the fit's unless the model
  is not hierarchical). The contrasts change these tests whenever a categorical factor has
  an interaction, so the sum-coded matrix is built explicitly (booleans count as two-level factors).
  With aliased coefficients the tests depend on which columns were dropped, so it is refused, as car
  refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.analysis.blas import single_blas_thread
from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.labels import is_categorical, stars
from engine.analysis.lsq import QR, added_ss, qr
from engine.analysis.options import ANOVA_TYPES
from engine.analysis.tails import f_p_value
from engine.model.formula import model_matrix
from engine.model.parser import INTERCEPT

COLUMNS = ["term", "Df", "Sum Sq", "Mean Sq", "F value", "Pr(>F)", "stars"]


@single_blas_thread
def anova(model: LinearModel, typ: int = 1) -> pd.DataFrame:
    """The ANOVA table of a fitted model, one row per term then ``Residuals``."""
    if typ not in ANOVA_TYPES:
        raise AnalysisError(f"anova type {typ!r}: expected 1, 2 or 3")
    if typ == 3:
        _refuse_aliased(model.aliased_)
        rows, refit = _type3(model)
        return _table(rows, refit.rss(model.y_), model.n_ - refit.rank)
    rows = {1: _type1, 2: _type2}[typ](model)
    return _table(rows, model.qr_.rss(model.y_), model.df_resid_)


def _refuse_aliased(aliased: Sequence[str]) -> None:
    """car refuses Type III with aliased coefficients, in the fit or in its sum-to-zero refit."""
    if aliased:
        raise AnalysisError(
            f"Type III ANOVA: the model has aliased coefficients ({', '.join(aliased)}), so its tests "
            "would depend on which column lm dropped (car refuses too); use Type II, or drop those terms")


def significant_terms(table: pd.DataFrame, threshold: float) -> list[str]:
    """Terms (R names) whose p-value is below ``threshold``; the intercept never counts."""
    p = table["Pr(>F)"]
    keep = (p < threshold) & ~table["term"].isin(["Residuals", "(Intercept)"])
    terms: list[str] = table.loc[keep, "term"].tolist()
    return terms


def _type1(model: LinearModel) -> list[tuple[str, int, float]]:
    effects = model.qr_.effects(model.y_)
    rows = []
    for term in model.terms_:
        positions = model.term_positions(term)
        if positions:
            rows.append((term.display, len(positions), float(effects[positions] @ effects[positions])))
    return rows


def _type2(model: LinearModel) -> list[tuple[str, int, float]]:
    """Every column, aliased ones too, in the coordinates of the fit's Q: an aliased column lies in that
    span, so ``Q'X`` holds all of X and each sub-model is again a small QR."""
    columns = model.qr_.Q.T @ model.matrix_.X
    effects = model.qr_.effects(model.y_)
    in_terms = {c for term in model.terms_ for c in range(term.columns.start, term.columns.stop)}
    intercept = [c for c in range(columns.shape[1]) if c not in in_terms]
    rows = []
    for term in model.terms_:
        base = intercept + [c for other in model.terms_ if other is not term and not other.contains(term)
                            for c in range(other.columns.start, other.columns.stop)]
        ss, df = added_ss(columns, base, range(term.columns.start, term.columns.stop), effects)
        rows.append((term.display, df, ss if df else np.nan))
    return rows


def _type3(model: LinearModel) -> tuple[list[tuple[str, int, float]], QR]:
    """The rows and the sum-to-zero refit they come from. Its residuals are the table's, as car's: R codes
    a factor by contrasts where the term without it lies in an earlier term, so in a model that is not
    hierarchical (``y ~ x + f:x + f:g``) contr.sum spans other columns than contr.treatment."""
    X, blocks = sum_coded_matrix(model)
    full = qr(X)
    _refuse_aliased([name for name, columns in blocks if not set(columns) <= set(full.kept.tolist())])
    effects = full.effects(model.y_)
    rows = []
    for name, columns in blocks:
        base = [p for p in range(full.rank) if p not in set(columns)]
        ss, df = added_ss(full.R, base, columns, effects)
        if df:
            rows.append((name, df, ss))
    return rows, full


def sum_coded_matrix(model: LinearModel) -> tuple[np.ndarray, list[tuple[str, list[int]]]]:
    """The model matrix under ``contr.sum`` and its column blocks: ``(Intercept)`` then each term."""
    data = model.data_
    intercept = [("(Intercept)", [0])] if model.formula_.has_intercept else []
    if not any(is_categorical(f, data) for term in model.terms_ for f in term.factors):
        blocks = [(t.display, list(range(t.columns.start, t.columns.stop))) for t in model.terms_]
        return model.matrix_.X, intercept + blocks
    matrix = model_matrix(model.formula_, data, contrasts="sum")
    term_slices = [s for label, s in matrix.term_slices.items() if label != INTERCEPT]
    blocks = [(t.display, list(range(s.start, s.stop))) for t, s in zip(model.terms_, term_slices)]
    return matrix.X, intercept + blocks


def _table(rows: list[tuple[str, int, float]], rss: float, df_resid: int) -> pd.DataFrame:
    """The table's figures from (term, df, SS); a term with 0 df (inside the others' span) has no test."""
    records: list[tuple[str, int, float, float, float, float, str | None]] = []
    for name, df, ss in rows:
        if not df:
            records.append((name, 0, np.nan, np.nan, np.nan, np.nan, None))
            continue
        f_value = (ss / df) / (rss / df_resid)
        p = f_p_value(f_value, df, df_resid)
        records.append((name, df, ss, ss / df, f_value, p, stars(p)))
    records.append(("Residuals", df_resid, rss, rss / df_resid, np.nan, np.nan, None))
    return pd.DataFrame.from_records(records, columns=COLUMNS)
