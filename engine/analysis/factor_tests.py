"""Whole-factor tests: does a factor matter at all, judged on every term that contains it, with the
multiplicity of testing every factor controlled.

Fixing a factor is a decision about the factor, not about one of its terms. A full cubic model of 8
factors tests 24 terms; at p < 0.05 an inert factor has a 14% chance that one of its three single-degree
tests passes, and 8 factors make that near certain for some factor (issue 30: all 8 fixed, 3 inert). So
each factor gets one test, the partial F of all the terms that contain it (its main effect, its powers,
its interactions) added last to every other term: the extra-sum-of-squares F, which is car's Type II
test of the factor's terms taken together (``car::linearHypothesis`` on their coefficients, or
``car::Anova`` of the model with ``poly(x, 3, raw = TRUE)`` as one term). The sums of squares come from
the fit's QR as in :mod:`engine.analysis.anova_tables`: every column, aliased ones too, in the
coordinates of Q, so an aliased column adds no df, whatever the order. The p-values are then adjusted
across the factors tested: Holm (family-wise error, the default) or Benjamini–Hochberg (false discovery
rate, JMP's "FDR LogWorth"), as ``statsmodels.stats.multitest.multipletests`` computes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.lsq import added_ss
from engine.analysis.options import ADJUSTMENTS
from engine.analysis.tails import log_f_sf

COLUMNS = ["factor", "terms", "Df", "Sum Sq", "F value", "Pr(>F)", "adjusted p", "LogWorth"]
#: How an adjustment is named in a reason.
ADJUSTMENT_NAMES = {"holm": "Holm", "fdr": "FDR", "none": "unadjusted"}


def adjusted_p(p: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values (NaN stays NaN and is not counted): Holm's step-down, or
    Benjamini–Hochberg's step-up false discovery rate, or none."""
    if method not in ADJUSTMENTS:
        raise AnalysisError(f"adjustment {method!r}: expected one of {', '.join(ADJUSTMENTS)}")
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m = len(tested)
    if not m:
        return out
    if method == "none":
        out[tested] = p[tested]
        return out
    order = tested[np.argsort(p[tested], kind="stable")]
    ranked = p[order]
    if method == "holm":
        stepped = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        stepped = np.minimum.accumulate(m / np.arange(m, 0, -1) * ranked[::-1])[::-1]
    out[order] = np.minimum(stepped, 1.0)
    return out


def partial_tests(columns: np.ndarray, effects: np.ndarray, groups: Sequence[Sequence[int]], rss: float,
                  df_resid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sum of squares, df, F and log p of each group of columns added last to all the other columns.

    ``columns`` and ``effects`` are Q'X (every column, aliased ones included) and Q'y of a full fit, as in
    :func:`engine.analysis.lsq.added_ss`; a group inside the others' span has 0 df and no test (NaN)."""
    k = columns.shape[1]
    ss, df = np.zeros(len(groups)), np.zeros(len(groups))
    for g, group in enumerate(groups):
        inside = set(group)
        ss[g], df[g] = added_ss(columns, [c for c in range(k) if c not in inside], list(group), effects)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(df > 0, (ss / np.maximum(df, 1)) / (rss / df_resid), np.nan) if rss > 0 else \
            np.where(df > 0, np.inf, np.nan)
    log_p = np.array([log_f_sf(float(f[g]), float(df[g]), float(df_resid)) if df[g] > 0 else math.nan
                      for g in range(len(groups))])
    return ss, df, f, log_p


def factor_groups(model: LinearModel) -> dict[str, list[int]]:
    """For each factor of the model, the matrix columns of every term that contains it."""
    return {v: [c for t in model.terms_ if v in t.variables for c in range(t.columns.start, t.columns.stop)]
            for v in model.variables_}


def factor_tests(model: LinearModel, adjust: str = "holm") -> pd.DataFrame:
    """One row per model factor, most significant first: its terms, the partial F of all of them, its
    p-value and the p-value adjusted across the factors (``adjust``), and LogWorth (−log10 p)."""
    groups = factor_groups(model)
    columns = model.qr_.Q.T @ model.matrix_.X
    effects = model.qr_.effects(model.y_)
    ss, df, f, log_p = partial_tests(columns, effects, list(groups.values()), model.qr_.rss(model.y_), model.df_resid_)
    terms = {v: [t.display for t in model.terms_ if v in t.variables] for v in groups}
    return tests_table(list(groups), [terms[v] for v in groups], ss, df, f, log_p, adjust)


def tests_table(factors: Sequence[str], terms: Sequence[Sequence[str]], ss: np.ndarray, df: np.ndarray,
                f: np.ndarray, log_p: np.ndarray, adjust: str) -> pd.DataFrame:
    """The factor tests as a table (shared by :func:`factor_tests` and the strategies' fast path)."""
    p = np.exp(log_p)
    table = pd.DataFrame({"factor": list(factors), "terms": [", ".join(t) for t in terms], "Df": df.astype(int),
                          "Sum Sq": np.where(df > 0, ss, np.nan), "F value": f, "Pr(>F)": p,
                          "adjusted p": adjusted_p(p, adjust), "LogWorth": -log_p / math.log(10.0)})
    return table.sort_values("LogWorth", ascending=False, kind="stable", na_position="last").reset_index(drop=True)


def significant_factors(table: pd.DataFrame, threshold: float) -> list[str]:
    """Factors whose adjusted p-value is below ``threshold``, most significant first."""
    rows = table[table["adjusted p"] < threshold]
    return [str(v) for v in rows["factor"]]


def reason(row: pd.Series, df_resid: int, adjust: str) -> str:
    """``x5 (x5, I(x5^2), I(x5^3)): F = 80.2 on 3 and 37 df, p = 1.3e-17, Holm-adjusted p = 1e-16``."""
    via = "" if row["terms"] == row["factor"] else f" ({row['terms']})"
    if not row["Df"]:
        return f"{row['factor']}{via}: no test (its terms are inside the other terms' span)"
    adjusted = "" if adjust == "none" else f", {ADJUSTMENT_NAMES[adjust]}-adjusted p = {row['adjusted p']:.2g}"
    return f"{row['factor']}{via}: F = {row['F value']:.3g} on {row['Df']} and {df_resid} df, p = {row['Pr(>F)']:.2g}{adjusted}"
