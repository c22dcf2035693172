"""Tests for non-constant variance: car's ``ncvTest`` and Breusch–Pagan.

Both are score tests on squared residuals, written out directly (five lines of numpy) so their
defaults are R's and not a library variant's: ``ncvTest`` regresses U = e²/(RSS/n) on the fitted
values and reports RegSS/2 on 1 df (Cook–Weisberg); Breusch–Pagan uses the model's regressors,
studentised (Koenker, as ``lmtest::bptest``) by default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from engine.analysis.lsq import qr
from engine.analysis.tails import chi_square_sf


@dataclass(frozen=True)
class VarianceTest:
    """One test of constant variance: a chi-square statistic, its df and p-value."""

    test: str
    statistic: float
    df: int
    p: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_test(resid: np.ndarray, Z: np.ndarray, studentize: bool = False) -> tuple[float, int, float]:
    """Chi-square, df and p of the score test of e² against the columns of ``Z`` (intercept added)."""
    resid = np.asarray(resid, dtype=float)
    n = len(resid)
    e2 = resid**2
    Z = np.column_stack([np.ones(n), np.asarray(Z, dtype=float).reshape(n, -1)])
    decomposition = qr(Z)
    df = decomposition.rank - 1
    if studentize:
        total = float(np.sum((e2 - e2.mean()) ** 2))
        stat = n * (1.0 - decomposition.rss(e2) / total) if total > 0 else 0.0
    else:
        u = e2 / (e2.sum() / n)
        stat = 0.5 * float(np.sum((decomposition.fitted(u) - u.mean()) ** 2))
    return stat, df, chi_square_sf(stat, df) if df > 0 else float("nan")


def ncv_test(resid: np.ndarray, fitted: np.ndarray) -> VarianceTest:
    """car's ``ncvTest``: Cook–Weisberg score test against the fitted values."""
    stat, df, p = score_test(resid, fitted)
    return VarianceTest("Non-constant Variance Score Test", stat, df, p)


def breusch_pagan(resid: np.ndarray, X: np.ndarray, studentize: bool = True) -> VarianceTest:
    """Breusch–Pagan against the model's regressors (columns of ``X``; a constant column is ignored)."""
    X = np.asarray(X, dtype=float)
    varying = np.ptp(X, axis=0) > 0
    stat, df, p = score_test(resid, X[:, varying], studentize)
    name = "Breusch-Pagan (studentized)" if studentize else "Breusch-Pagan"
    return VarianceTest(name, stat, df, p)
