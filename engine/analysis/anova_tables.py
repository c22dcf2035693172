"""ANOVA tables as R prints them: Type I (``summary(aov)``), Type II and III (``car::Anova``).

* Type I: sequential SS, the squared QR effects of each term's columns in R's term order.
* Type II (car): SS(term) = what the term adds to every term that does not contain it; error = full model.
* Type III (car): the model refitted with sum-to-zero contrasts; SS(term) = what the term's columns
  add to all the other columns. The contrasts change these tests whenever a categorical factor has
  an interaction, so the sum-coded matrix is built explicitly (booleans count as two-level factors,
  as R reads ``true``/``false``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from formulaic import Formula
from scipy import stats

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.labels import is_categorical, stars
from engine.analysis.lsq import added_ss, qr
from engine.analysis.options import ANOVA_TYPES
from engine.model.formula import formulaic_matrix, model_frame

COLUMNS = ["term", "Df", "Sum Sq", "Mean Sq", "F value", "Pr(>F)", "stars"]


def anova(model: LinearModel, typ: int = 1) -> pd.DataFrame:
    """The ANOVA table of a fitted model, one row per term then ``Residuals``."""
    if typ not in ANOVA_TYPES:
        raise AnalysisError(f"anova type {typ!r}: expected 1, 2 or 3")
    rows = {1: _type1, 2: _type2, 3: _type3}[typ](model)
    return _table(rows, model.qr_.rss(model.y_), model.df_resid_)


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


def _intercept_positions(model: LinearModel) -> list[int]:
    in_terms = {p for term in model.terms_ for p in model.term_positions(term)}
    return [p for p in range(len(model.kept_)) if p not in in_terms]


def _type2(model: LinearModel) -> list[tuple[str, int, float]]:
    rows = []
    for term in model.terms_:
        positions = model.term_positions(term)
        if not positions:
            continue
        base = _intercept_positions(model) + [
            p for other in model.terms_ if other is not term and not other.contains(term) for p in model.term_positions(other)
        ]
        ss, df = added_ss(model.qr_.R, base, positions, model.qr_.effects(model.y_))
        if df:
            rows.append((term.display, df, ss))
    return rows


def _type3(model: LinearModel) -> list[tuple[str, int, float]]:
    X, blocks = sum_coded_matrix(model)
    full = qr(X)
    position = {c: i for i, c in enumerate(full.kept.tolist())}
    effects = full.effects(model.y_)
    rows = []
    for name, columns in blocks:
        columns = [position[c] for c in columns if c in position]
        base = [p for p in range(full.rank) if p not in set(columns)]
        ss, df = added_ss(full.R, base, columns, effects)
        if df:
            rows.append((name, df, ss))
    return rows


def sum_coded_matrix(model: LinearModel) -> tuple[np.ndarray, list[tuple[str, list[int]]]]:
    """The model matrix under ``contr.sum`` and its column blocks: ``(Intercept)`` then each term."""
    data = model.data_
    intercept = [("(Intercept)", [0])] if model.formula_.has_intercept else []
    if not any(is_categorical(f, data) for term in model.terms_ for f in term.factors):
        blocks = [(t.display, list(range(t.columns.start, t.columns.stop))) for t in model.terms_]
        return model.matrix_.X, intercept + blocks
    parts = [":".join(_sum_factor(f, data) for f in term.factors) for term in model.terms_]
    text = ("1 + " if model.formula_.has_intercept else "0 + ") + " + ".join(parts)
    frame = model_frame(data, model.formula_.variables)
    matrix = formulaic_matrix(Formula(text, _ordering="none"), frame)
    slices = [(str(t), s) for t, s in matrix.model_spec.term_slices.items()]
    term_slices = [s for label, s in slices if label != "1"]
    if len(term_slices) != len(model.terms_):
        raise AnalysisError(f"formula {model.formula!r}: cannot build its sum-to-zero coding for Type III")
    blocks = [(t.display, list(range(s.start, s.stop))) for t, s in zip(model.terms_, term_slices)]
    return np.asarray(matrix, dtype=float), intercept + blocks


def _sum_factor(factor: str, data: pd.DataFrame) -> str:
    """Rewrite one (already whitelisted) factor expression to carry sum-to-zero contrasts."""
    if not is_categorical(factor, data):
        return factor
    inner = factor[2:-1] if factor.startswith("C(") and factor.endswith(")") else factor
    return f"C({inner}, contr.sum)"


def _table(rows: list[tuple[str, int, float]], rss: float, df_resid: int) -> pd.DataFrame:
    records = []
    for name, df, ss in rows:
        f_value = (ss / df) / (rss / df_resid)
        p = float(stats.f.sf(f_value, df, df_resid))
        records.append((name, df, ss, ss / df, f_value, p, stars(p)))
    records.append(("Residuals", df_resid, rss, rss / df_resid, np.nan, np.nan, None))
    return pd.DataFrame.from_records(records, columns=COLUMNS)
