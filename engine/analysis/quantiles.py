"""Normal and Student t quantiles as R's ``qnorm`` and ``qt``, without scipy (its import alone cost more CPU
than R's whole analysis report, issue 31).

The normal quantile is Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988), the one R's ``qnorm``
uses: three rational approximations, relative error ~1e-16. The t quantile solves the t tail of
:mod:`engine.analysis.tails` by Newton's method in u = log t: log|T| has a log-concave density, so the log of
its tail (or of its distribution function) is concave in u and Newton converges monotonically from a start
clamped to the right side of the root, to the tail's own accuracy (~1e-15 relative). Where df is large and the
Cornish–Fisher series in 1/df is exact to double precision (the tail itself loses digits there), that series.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from engine.analysis.tails import log_beta, log_t_central, log_t_upper

# AS 241's coefficients, highest power first (np.polyval's order): numerator and denominator of the central
# region |p − ½| ≤ 0.425 in r = 0.180625 − (p − ½)², then of the tails in r = sqrt(−log min(p, 1 − p)) − 1.6
# (r ≤ 5) and r − 5 (beyond).
_CENTRAL_NUM = (2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4, 4.5921953931549871457e4,
                1.3731693765509461125e4, 1.9715909503065514427e3, 1.3314166789178437745e2, 3.3871328727963666080e0)
_CENTRAL_DEN = (5.2264952788528545610e3, 2.8729085735721942674e4, 3.9307895800092710610e4, 2.1213794301586595867e4,
                5.3941960214247511077e3, 6.8718700749205790830e2, 4.2313330701600911252e1, 1.0)
_NEAR_NUM = (7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1, 1.27045825245236838258e0,
             3.64784832476320460504e0, 5.76949722146069140550e0, 4.63033784615654529590e0, 1.42343711074968357734e0)
_NEAR_DEN = (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2, 1.48103976427480074590e-1,
             6.89767334985100004550e-1, 1.67638483018380384940e0, 2.05319162663775882187e0, 1.0)
_FAR_NUM = (2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3, 2.65321895265761230930e-2,
            2.96560571828504891230e-1, 1.78482653991729133580e0, 5.46378491116411436990e0, 6.65790464350110377720e0)
_FAR_DEN = (2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5, 7.86869131145613259100e-4,
            1.48753612908506148525e-2, 1.36929880922735805310e-1, 5.99832206555887937690e-1, 1.0)


def normal_quantile(p: ArrayLike) -> np.ndarray:
    """Φ⁻¹(p) elementwise (scipy's ``ndtri``, R's ``qnorm``): ±inf at 1 and 0, NaN outside [0, 1]."""
    p = np.asarray(p, dtype=float)
    q = p - 0.5
    out = np.full(p.shape, np.nan)
    central = np.abs(q) <= 0.425
    r = 0.180625 - q[central] ** 2
    out[central] = q[central] * np.polyval(_CENTRAL_NUM, r) / np.polyval(_CENTRAL_DEN, r)
    tail = ~central & (p > 0.0) & (p < 1.0)
    low = q[tail] < 0.0
    r = np.sqrt(-np.log(np.where(low, p[tail], 1.0 - p[tail])))
    near = r <= 5.0
    value = np.empty_like(r)
    value[near] = np.polyval(_NEAR_NUM, r[near] - 1.6) / np.polyval(_NEAR_DEN, r[near] - 1.6)
    value[~near] = np.polyval(_FAR_NUM, r[~near] - 5.0) / np.polyval(_FAR_DEN, r[~near] - 5.0)
    out[tail] = np.where(low, -value, value)
    out[p == 0.0] = -np.inf
    out[p == 1.0] = np.inf
    return out


#: Newton stops once a step in log t is below this; quadratic convergence leaves ~its square.
NEWTON_TOL = 1e-12
NEWTON_STEPS = 200
#: The Cornish–Fisher series is t where df ≥ this and its last term is below CORNISH_FISHER_LAST·|z| (then
#: the terms it leaves out are ~1e-16 of t). Elsewhere Newton's method on the tail, which for df ≫ 1e4 near the
#: centre loses digits (the incomplete beta's fraction at x ≈ 1 − t²/df is sensitive to x's last bit).
CORNISH_FISHER_DF = 1000.0
CORNISH_FISHER_LAST = 1e-13


def _cornish_fisher(z: float, df: float) -> tuple[float, float]:
    """The t quantile from the normal one z, to 1/df⁴ (Abramowitz & Stegun 26.7.5), and its last term."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df, g4 / df**4


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t on ``df`` degrees of freedom (R's ``qt(p, df)``, scipy's
    ``stdtrit(df, p)``), to ~1e-15 relative; df may be fractional, and infinite (the normal quantile)."""
    if math.isnan(p) or math.isnan(df) or not df > 0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p in (0.0, 1.0):
        return math.inf if p == 1.0 else -math.inf
    if p == 0.5:
        return 0.0
    sign, tail = (1.0, 1.0 - p) if p > 0.5 else (-1.0, p)  # 1 − p is exact for p > ½
    if math.isinf(df):
        return sign * float(-normal_quantile(tail))
    if df == 1.0:  # Cauchy: P(T > t) = ½ − atan(t)/π
        return sign * (1.0 / math.tan(math.pi * tail) if tail < 0.25 else math.tan(math.pi * (0.5 - tail)))
    if df == 2.0:  # P(T > t) = ½·(1 − t/√(2 + t²))
        return sign * (1.0 - 2.0 * tail) / math.sqrt(2.0 * tail * (1.0 - tail))
    z = float(-normal_quantile(tail))
    start, last = _cornish_fisher(z, df)
    if df >= CORNISH_FISHER_DF and abs(last) <= CORNISH_FISHER_LAST * z:
        return sign * start
    return sign * _t_newton(tail, df, start)


def _t_newton(tail: float, df: float, start: float) -> float:
    """t > 0 with P(T > t) = tail, by Newton's method in u = log t on a concave function of u: the log tail
    where tail ≤ ¼, else (t small) the log of P(|T| < t) = 1 − 2·tail, which is ~u + const there."""
    log_density_0 = -0.5 * math.log(df) - log_beta(df / 2.0, 0.5)  # log f(0)
    upper = tail <= 0.25
    if upper:
        target = math.log(tail)
        # f(t) < df^(df/2)·t^−(df+1)/B, so P(T > t) < df^(df/2)·t^−df/(df·B): its t is right of the root.
        bound = (0.5 * df * math.log(df) - math.log(df) - log_beta(df / 2.0, 0.5) - target) / df
    else:
        target = math.log1p(-2.0 * tail)
        # P(|T| < t) < 2t·f(0): the t where that bound is reached is left of the root.
        bound = target - math.log(2.0) - log_density_0
    u = math.log(start) if start > 0.0 and math.isfinite(start) else bound
    u = min(u, bound) if upper else max(u, bound)
    for _ in range(NEWTON_STEPS):
        # log f(t) = log f(0) − (df+1)/2 · log(1 + t²/df), with log(1 + e^w) for w = log(t²/df)
        w = 2.0 * u - math.log(df)
        log_density = log_density_0 - 0.5 * (df + 1.0) * (max(w, 0.0) + math.log1p(math.exp(-abs(w))))
        if upper:
            value = log_t_upper(u, df)
            slope = -math.exp(u + log_density - value)
        else:
            value = log_t_central(u, df)
            slope = 2.0 * math.exp(u + log_density - value)
        moved = u
        # a vanishing slope (t far off) restarts from the bound, on the root's convergent side
        u = u - (value - target) / slope if slope != 0.0 and math.isfinite(slope) else bound
        u = min(u, bound) if upper else max(u, bound)
        if not math.isfinite(u) or abs(u - moved) < NEWTON_TOL:
            break
    return math.exp(u) if u < math.log(np.finfo(float).max) else math.inf
