"""Response transforms: car's ``bcPower``, ``powerTransform`` (Box–Cox on the regression) and ``roundlam``.

car estimates λ by maximising the profile log-likelihood of the *linear model* (residuals of the
transformed response on X), not the marginal Box–Cox of scipy. Its own code computes
``gm^(1-λ)·(y^λ − 1)/λ``, which cancels catastrophically for y ≈ 1e-9 s and λ > 0; here the same
likelihood is computed as ``gm·expm1(λ·log(y/gm))/λ``, which differs from car's value only by a
constant that the intercept absorbs (see the r_stats README, case 6). λ̂ is found as the root of
the analytic derivative, so it is as precise as doubles allow, not as flat as the objective.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.lsq import QR
from engine.analysis.tails import chi_square_sf
from engine.errors import UserError

#: car's rounded-λ candidates, in priority order: the first inside the Wald interval wins.
ROUND_CHOICES = (1.0, 0.0, -1.0, 0.5, 0.33, -0.5, -0.33, 2.0, -2.0)
#: car's bcPower switches to the log below this |λ|.
LOG_THRESHOLD = 1e-6
#: car's Wald interval half-width multiplier.
WALD_Z = 1.96


class TransformError(UserError):
    """The response cannot be transformed as asked."""


@dataclass(frozen=True)
class Transform:
    """A monotone response transform: identity (``lam=None``), log (``lam=0``) or ``bcPower(λ)``."""

    lam: float | None = None

    @property
    def label(self) -> str:
        if self.lam is None:
            return "none"
        if abs(self.lam) <= LOG_THRESHOLD:
            return "log"
        return f"bcPower(lambda={self.lam:.6g})"

    @property
    def short_label(self) -> str:
        """What fits a narrow metric: ``none``, ``log`` or ``λ = 0.333``."""
        return self.label if self.lam is None or abs(self.lam) <= LOG_THRESHOLD else f"λ = {self.lam:.3g}"

    def apply(self, y: np.ndarray) -> np.ndarray:
        """car's ``bcPower(y, λ)`` without the Jacobian: ``(y^λ − 1)/λ``, or ``log y``."""
        y = np.asarray(y, dtype=float)
        if self.lam is None:
            return y
        if abs(self.lam) <= LOG_THRESHOLD:
            z: np.ndarray = np.log(y)
        else:
            z = (y**self.lam - 1.0) / self.lam
        return z

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Back to the response scale; where ``λz + 1 ≤ 0`` the limit (0 or ∞) is returned."""
        z = np.asarray(z, dtype=float)
        if self.lam is None:
            return z
        if abs(self.lam) <= LOG_THRESHOLD:
            y: np.ndarray = np.exp(z)
            return y
        base = self.lam * z + 1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.power(np.where(base > 0, base, 1.0), 1.0 / self.lam)
        return np.where(base > 0, out, 0.0 if self.lam > 0 else np.inf)


def require_positive(y: np.ndarray, response: str, what: str = "Box-Cox") -> None:
    """One-line error naming the response when a power transform cannot apply."""
    bad = ~(np.asarray(y) > 0)
    if bad.any():
        raise TransformError(
            f"response {response!r}: {what} needs positive values; {int(bad.sum())} of {len(y)} rows are <= 0 "
            f"(min {np.nanmin(y):.6g})"
        )


class BoxCoxProfile:
    """Profile log-likelihood of λ for the linear model with QR ``qr`` and positive response ``y``."""

    def __init__(self, qr: QR, y: np.ndarray, has_intercept: bool = True):
        self.qr = qr
        self.n = len(y)
        self.log_y = np.log(y)
        self.gm = math.exp(float(np.mean(self.log_y)))
        # With an intercept, centring log y at log gm only adds a constant to z: stable for any λ.
        self.t = self.log_y - (math.log(self.gm) if has_intercept else 0.0)
        self.scale = self.gm if has_intercept else None

    def _core(self, lam: float, order: int = 2) -> list[np.ndarray]:
        """c = expm1(λt)/λ and its first ``order`` (≤ 2) λ-derivatives; series where λ·t is small (the closed
        forms cancel there), each form computed only where it is used."""
        t, u = self.t, lam * self.t
        c: np.ndarray = t if lam == 0.0 else np.expm1(u) / lam
        out = [c]
        if order == 0:
            return out
        small = np.ones(t.shape, dtype=bool) if lam == 0.0 else np.abs(u) < 1e-3
        s, w = t[small], u[small]
        v = u[~small]
        exp_v, expm1_v = (np.exp(v), np.expm1(v)) if v.size else (v, v)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k in range(1, order + 1):
                d = np.empty_like(t)
                if k == 1:
                    d[small] = s**2 * (0.5 + w / 3.0 + w**2 / 8.0 + w**3 / 30.0)
                    d[~small] = (v * exp_v - expm1_v) / lam**2
                else:
                    d[small] = s**3 * (1.0 / 3.0 + w / 4.0 + w**2 / 10.0 + w**3 / 36.0 + w**4 / 168.0)
                    d[~small] = ((v * v - 2.0 * v) * exp_v + 2.0 * expm1_v) / lam**3
                out.append(d)
        return out

    def _z_derivatives(self, lam: float, order: int) -> list[np.ndarray]:
        """z and its first ``order`` λ-derivatives (z = gm·c with an intercept, else gm^(1−λ)·c)."""
        core = self._core(lam, order)
        if self.scale is not None:
            return [self.gm * d for d in core]
        scale, log_gm = self.gm ** (1.0 - lam), math.log(self.gm)
        out = [scale * core[0]]
        if order >= 1:
            out.append(scale * (core[1] - log_gm * core[0]))
        if order >= 2:
            out.append(scale * (core[2] - 2.0 * log_gm * core[1] + log_gm**2 * core[0]))
        return out

    def z(self, lam: float) -> np.ndarray:
        """The Jacobian-scaled transform, up to an additive constant when there is an intercept."""
        return self._z_derivatives(lam, 0)[0]

    def dz(self, lam: float) -> np.ndarray:
        """d z / d λ."""
        return self._z_derivatives(lam, 1)[1]

    def d2z(self, lam: float) -> np.ndarray:
        """d² z / d λ²."""
        return self._z_derivatives(lam, 2)[2]

    def evaluate(self, lam: float, order: int = 2) -> tuple[float, float, float]:
        """(loglik, score, curvature) at λ from one pass over the data; those past ``order`` are NaN. A
        perfect fit (RSS = 0) raises ZeroDivisionError from the score, ValueError from the likelihood alone."""
        derivatives = self._z_derivatives(lam, order)
        r = self.qr.resid(derivatives[0])
        rss = float(r @ r)
        score = curvature = math.nan
        if order >= 1:
            dz = derivatives[1]
            r_dz = float(r @ dz)
            score = -self.n * r_dz / rss
            if order >= 2:
                projected = self.qr.resid(dz)
                curvature = self.n * (float(projected @ projected + r @ derivatives[2]) / rss - 2.0 * r_dz**2 / rss**2)
        return -0.5 * self.n * math.log(rss / self.n), score, curvature

    def curvature(self, lam: float) -> float:
        """−d² loglik / d λ² (the observed information), analytic: with r = M z and RSS = r'r,
        loglik'' = −n·[(‖M z'‖² + r'z'')/RSS − 2·(r'z')²/RSS²]."""
        return self.evaluate(lam, 2)[2]

    def loglik(self, lam: float) -> float:
        """car's ``−(n/2)·log(RSS(λ)/n)``, the quantity ``powerTransform`` maximises."""
        return self.evaluate(lam, 0)[0]

    def score(self, lam: float) -> float:
        """d loglik / d λ = −n · r'(dz/dλ) / RSS."""
        return self.evaluate(lam, 1)[1]

    def curve(self, lambdas: Sequence[float] | np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"lambda": list(lambdas), "loglik": [self.loglik(float(v)) for v in lambdas]})


@dataclass(frozen=True)
class PowerTransformResult:
    """car's ``powerTransform`` summary: λ̂, its SE, the Wald interval, ``roundlam`` and LR tests."""

    lambda_: float
    se: float
    wald_lower: float
    wald_upper: float
    lambda_rounded: float
    loglik: float
    lr_tests: tuple[tuple[float, float, float], ...]  # (λ0, LRT, p) for λ0 = 0 and 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "lambda": self.lambda_,
            "se": self.se,
            "wald_lower": self.wald_lower,
            "wald_upper": self.wald_upper,
            "lambda_rounded": self.lambda_rounded,
            "loglik": self.loglik,
            "lr_tests": [{"lambda": l0, "LRT": lrt, "df": 1, "p": p} for l0, lrt, p in self.lr_tests],
        }


def round_lambda(lam: float, se: float) -> float:
    """car's ``roundlam``: the first of :data:`ROUND_CHOICES` inside λ̂ ± 1.96·SE, else λ̂."""
    lower, upper = lam - WALD_Z * se, lam + WALD_Z * se
    for choice in ROUND_CHOICES:
        if lower <= choice <= upper:
            return choice
    return lam


def power_transform(profile: BoxCoxProfile) -> PowerTransformResult:
    """Maximise the profile likelihood: car's bounded start on [−3, 3] (a coarse golden section, which lands
    in the basin a fine one would), then the exact stationary point by Newton's method on the score.

    With one residual degree of freedom the residual is a single number that some λ makes zero: the
    likelihood has no maximum (R's optim fails inside car::powerTransform), so that is refused."""
    df_resid = profile.n - profile.qr.rank
    if df_resid < 2:
        raise TransformError(f"Box-Cox: {df_resid} residual degree of freedom, so λ cannot be estimated "
                             "(car refuses too); use transform none or log, or measure more configurations")
    def neg(lam: float) -> float:
        return -profile.loglik(float(lam))

    start = _golden_minimum(neg, -3.0, 3.0, START_XATOL)
    lam = _stationary_point(profile, start)
    best, _, curvature = profile.evaluate(lam, 2)
    se = 1.0 / math.sqrt(curvature) if curvature > 0 else math.nan
    tests = []
    for l0 in (0.0, 1.0):
        lrt = max(2.0 * (best - profile.loglik(l0)), 0.0)
        tests.append((l0, lrt, chi_square_sf(lrt, 1)))
    rounded = round_lambda(lam, se) if math.isfinite(se) else lam
    return PowerTransformResult(lam, se, lam - WALD_Z * se, lam + WALD_Z * se, rounded, best, tuple(tests))


#: The golden ratio's conjugate, (√5 − 1)/2: the share of the interval each golden-section step keeps.
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
#: The golden section's interval at the start of Newton's method: its midpoint is within half of it of the
#: fine search's minimum, inside the first bracket _stationary_point tries (±1e-3).
START_XATOL = 1e-3
#: Widths of the brackets tried around the start, narrowest first (car's optimiser is unbounded too).
BRACKETS = (1e-3, 1e-2, 0.1, 1.0, 4.0)


def _golden_minimum(f: Callable[[float], float], lo: float, hi: float, xatol: float) -> float:
    """A local minimum of ``f`` on [lo, hi] by golden-section search, to ``xatol``: the start the exact
    stationary point is bracketed from (scipy.optimize's bounded Brent did this; its import cost more CPU
    than R's whole report, issue 31)."""
    a, b = lo, hi
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > xatol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2.0


def _newton_root(profile: BoxCoxProfile, lo: float, hi: float, lam: float) -> float:
    """The root of the score in [lo, hi] (score(lo) > 0 > score(hi)) from ``lam`` inside, by Newton's method
    with the analytic curvature, kept in the shrinking bracket (bisection where a step leaves it or the
    curvature is not positive), to 1e-14 plus 4 ulps (brentq's tolerances here before)."""
    for _ in range(MAX_STEPS):
        _, score, curvature = profile.evaluate(lam, 2)
        if score == 0:
            return lam
        if score > 0:
            lo = lam
        else:
            hi = lam
        step = score / curvature if curvature > 0 else math.nan
        new = lam + step
        if not lo < new < hi:
            new = (lo + hi) / 2.0
        tolerance = 1e-14 + 4 * np.finfo(float).eps * abs(new)
        if abs(new - lam) <= tolerance or hi - lo <= tolerance:
            return new
        lam = new
    return lam


#: Newton's steps are at most this many (bisection alone halves the widest bracket to 1e-14 in 50).
MAX_STEPS = 100


def _stationary_point(profile: BoxCoxProfile, start: float) -> float:
    """Root of the score near ``start``; widen the bracket (car's optimiser is unbounded too)."""
    for width in BRACKETS:
        lo, hi = start - width, start + width
        try:
            s_lo, s_hi = profile.score(lo), profile.score(hi)
        except (FloatingPointError, ZeroDivisionError, OverflowError):
            break
        if math.isfinite(s_lo) and math.isfinite(s_hi) and s_lo > 0 > s_hi:
            return _newton_root(profile, lo, hi, start)
    raise TransformError(f"Box-Cox: no finite lambda maximises the likelihood near {start:.3g}; use --transform none or log")
