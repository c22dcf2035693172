"""OLS, Type I ANOVA, ncvTest and Box–Cox on bare arrays: engine.analysis at benchmark speed.

:mod:`engine.analysis` is the reference (R-checked, with formulas, tables and explanations) and is
what DLMT uses when a person reviews its decisions. A benchmark replays DLMT a thousand times, and
building formulas and DataFrames for every fit costs more than the whole search may; this module
computes the same numbers from a model matrix and a response, with the same rules:

* the QR and R's aliasing rule are engine.analysis's own (:func:`engine.analysis.lsq.qr`);
* Type I sums of squares from the QR effects, F against the full model's residual mean square;
* whole-factor tests (every term of a factor added last) from the same QR, by engine.analysis's own code;
* ``car::ncvTest``: RegSS/2 of U = e²/(RSS/n) on the fitted values, chi-square with 1 df;
* ``car::powerTransform``: λ maximising the profile log-likelihood of the *regression*, its SE from
  the curvature, ``roundlam`` from :func:`engine.analysis.round_lambda`.

The Box–Cox response is fitted as ``expm1(λ·log(y/ġ))/λ``, an affine image of ``bcPower(y, λ)``:
every F, p-value and argmin is unchanged and it does not cancel for y ≈ 1e-10 s.
tests/test_strategies_dlmt.py checks it against engine.analysis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import optimize, special

from engine.analysis.lsq import QR, added_ss, qr
from engine.analysis.options import NCV_ALPHA


def f_sf(f: np.ndarray, df1: np.ndarray, df2: float) -> np.ndarray:
    """Upper tail of F(df1, df2) (scipy.special, without scipy.stats' dispatch overhead)."""
    f = np.asarray(f, dtype=float)
    x = df2 / (df2 + df1 * f)
    p: np.ndarray = special.betainc(df2 / 2.0, np.asarray(df1, dtype=float) / 2.0, x)
    return p


def ncv_p(resid: np.ndarray, fitted: np.ndarray) -> float:
    """p-value of car's ncvTest (Cook–Weisberg score test against the fitted values)."""
    n = len(resid)
    e2 = resid * resid
    total = e2.sum()
    if total <= 0 or np.ptp(fitted) == 0:
        return 1.0
    u = e2 / (total / n)
    f = fitted - fitted.mean()
    reg_ss = (f @ (u - u.mean())) ** 2 / (f @ f)
    return float(special.chdtrc(1, reg_ss / 2.0))


@dataclass(frozen=True)
class BoxCox:
    lam: float
    se: float
    rounded: float


def box_cox(decomposition: QR, y: np.ndarray) -> BoxCox | None:
    """car's powerTransform estimate for a model with an intercept; None when y is not positive.

    The likelihood is engine.analysis's :class:`~engine.analysis.transform.BoxCoxProfile`; only the
    search (a bounded scalar minimisation and a finite-difference SE) is lighter than its Newton + CI."""
    from engine.analysis.transform import BoxCoxProfile, round_lambda

    if not np.all(y > 0):
        return None
    profile = BoxCoxProfile(decomposition, y)

    def neg_loglik(lam: float) -> float:
        try:
            return -profile.loglik(lam)
        except ValueError:  # RSS = 0: a perfect fit at this λ
            return -math.inf

    opt = optimize.minimize_scalar(neg_loglik, bounds=(-3.0, 3.0), method="bounded", options={"xatol": 1e-7})
    lam = float(opt.x)
    h = 1e-4
    curvature = (neg_loglik(lam + h) - 2.0 * neg_loglik(lam) + neg_loglik(lam - h)) / h**2
    se = 1.0 / math.sqrt(curvature) if curvature > 0 else math.nan
    rounded = round_lambda(lam, se) if math.isfinite(se) else lam
    return BoxCox(lam, se, rounded)


def transformed(y: np.ndarray, lam: float | None) -> np.ndarray:
    """Response on the fitted scale: y, or an affine image of bcPower(y, λ)."""
    if lam is None:
        return y
    t: np.ndarray = np.log(y) - np.mean(np.log(y))
    return t if abs(lam) <= 1e-6 else np.expm1(lam * t) / lam


@dataclass
class FastFit:
    """One fitted model: transform used, coefficients on the kept columns, Type I ANOVA per term."""

    qr: QR
    beta: np.ndarray
    lam: float | None
    ncv_p: float
    box_cox: BoxCox | None
    df: np.ndarray  # per term (0 where every column of the term is aliased)
    ss: np.ndarray
    f: np.ndarray
    p: np.ndarray
    rss: float
    df_resid: int
    effects: np.ndarray  # Q'z: what sub-model tests are computed from

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Prediction on the fitted (transformed) scale; monotone in the response, so its argmin is
        the predicted best."""
        prediction: np.ndarray = X[:, self.qr.kept] @ self.beta
        return prediction


def type2(X: np.ndarray, z: np.ndarray, slices: Sequence[slice], contains: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """car's Type II sums of squares and df: what each term's columns add to all the columns (aliased
    ones too) of the terms that do not contain it (``contains[t]``: the terms containing term t), so a
    term inside the others' span has 0 df whatever the term order."""
    ss, df = np.zeros(len(slices)), np.zeros(len(slices))
    for t, sl in enumerate(slices):
        drop = {t, *contains[t]}
        base = [0] + [c for u, other in enumerate(slices) if u not in drop for c in range(other.start, other.stop)]
        ss[t], df[t] = added_ss(X, base, range(sl.start, sl.stop), z)
    return ss, df


def fit(X: np.ndarray, y: np.ndarray, slices: Sequence[slice], transform: str | float = "none", ncv_alpha: float = NCV_ALPHA,
        anova_type: int = 1, contains: Sequence[Sequence[int]] | None = None) -> FastFit | None:
    """Fit ``y ~ X`` (intercept in column 0, term columns in ``slices``); None without residual df.
    ``anova_type`` 1 (sequential, R's aov) or 2 (car's Type II, needs ``contains``)."""
    decomposition = qr(X)
    n = len(y)
    if n <= decomposition.rank or np.ptp(y) == 0:
        return None
    resid = decomposition.resid(y)
    p_ncv = ncv_p(resid, y - resid)
    bc = None
    lam: float | None = None
    positive = bool(np.all(y > 0))
    if isinstance(transform, (int, float)) and not isinstance(transform, bool):
        lam = float(transform) if positive else None
    elif transform == "log":
        lam = 0.0 if positive else None
    elif transform != "none" and (not cast(str, transform).startswith("auto") or p_ncv < ncv_alpha):  # a rule: options refuse a bool
        bc = box_cox(decomposition, y)
        if bc is not None:
            lam = bc.rounded if cast(str, transform).endswith("round") else bc.lam
    z = transformed(y, lam)
    effects = decomposition.Q.T @ z
    beta = np.linalg.solve(decomposition.R, effects) if decomposition.rank else np.zeros(0)
    r = z - decomposition.Q @ effects
    rss = float(r @ r)
    df_resid = n - decomposition.rank
    column_of = {int(c): i for i, c in enumerate(decomposition.kept)}
    df = np.zeros(len(slices))
    ss = np.zeros(len(slices))
    for t, sl in enumerate(slices):
        pos = [column_of[c] for c in range(sl.start, sl.stop) if c in column_of]
        df[t] = len(pos)
        ss[t] = float(effects[pos] @ effects[pos]) if pos else 0.0
    if anova_type == 2:
        ss, df = type2(X, z, slices, contains or [[] for _ in slices])
    with np.errstate(divide="ignore", invalid="ignore"):
        fval = np.where(df > 0, (ss / np.maximum(df, 1)) / (rss / df_resid), np.nan)
        p = np.where(df > 0, f_sf(np.where(df > 0, fval, 0.0), np.maximum(df, 1), df_resid), np.nan)
    if rss == 0:
        p = np.where(df > 0, 0.0, np.nan)
    return FastFit(decomposition, beta, lam, p_ncv, bc, df, ss, fval, p, rss, df_resid, effects)


def factor_tests(fitted: FastFit, X: np.ndarray, groups: Sequence[Sequence[int]]) -> tuple[np.ndarray, ...]:
    """Sum of squares, df, F and log p of each group of columns (a factor's terms) added last to all the
    others: engine.analysis's whole-factor tests (:func:`engine.analysis.factor_tests.partial_tests`) on this fit."""
    from engine.analysis.factor_tests import partial_tests

    return partial_tests(fitted.qr.Q.T @ X, fitted.effects, groups, fitted.rss, fitted.df_resid)
