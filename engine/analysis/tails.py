"""Upper tails of the F, t and chi-square distributions, accurate as R's ``pf``/``pt``/``pchisq`` down to the
smallest doubles, without scipy (scipy.special's import alone cost more CPU than R's whole report, issue 31).

scipy's ``f.sf`` (Boost's incomplete beta) loses accuracy in the far tail well before it underflows: 14%
off at p = 1e-298 on (40, 200) df, 4e-6 off at 1e-279 on (40, 2000), and 0 or −inf below ~1e-308, where
R's ``pf(..., log.p = TRUE)`` stays right (a LogWorth, −log10 p, must not be capped or infinite). Here
P(F > f) = I_x(d2/2, d1/2) with x = d2/(d2 + d1·f) is computed in log space: the prefactor
x^a (1−x)^b / (a·B(a, b)) from logs of the odds d1·f/d2 (never from x rounded near 1), times the
incomplete beta's continued fraction (Lentz's method), which converges fast wherever
x < (a+1)/(a+b+2), the whole region where p is below about 0.1. Above it the same fraction gives the
complement, I_x(a, b) = 1 − I_{1−x}(b, a), p not being small there. A two-sided t test is the F test of t² on
(1, df), with t² never formed (it overflows past |t| ≈ 1e154). The chi-square tail Q(df/2, x/2) keeps e^(−x/2)
apart from rounded logs, so a p of 1e-300 keeps its relative accuracy (scipy's is 1e-13 off there).
"""

from __future__ import annotations

import math

import numpy as np

#: The continued fraction stops when a step changes it by less than this (relative).
CF_TOL = 1e-16
#: It converges in O(sqrt(max(a, b))) steps inside its region; this bound is never reached there.
CF_STEPS = 100_000
_TINY = 1e-300


#: Stirling's series for log Γ(z) − ((z − ½) log z − z + ½ log 2π): B₂ₖ / (2k (2k − 1)), k = 1…8.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
#: From here on, 8 terms of Stirling's series reach double precision.
STIRLING_FROM = 10.0


def _stirling(z: float) -> float:
    return sum(c / z ** (2 * k + 1) for k, c in enumerate(_STIRLING))


def log_beta(a: float, b: float) -> float:
    """log B(a, b) to double precision also where a + b is large: scipy's ``betaln`` and a sum of
    ``lgamma`` lose ~1e-9 there (log Γ(1e5) is 1e6), which the far tail multiplies into its p-value.
    With the larger argument past STIRLING_FROM, log Γ(big) − log Γ(big + small) comes from Stirling's
    series in closed form (TOMS 708's ``algdiv`` does the same for R's ``pbeta``)."""
    small, big = sorted((a, b))
    if big < STIRLING_FROM:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    total = small + big
    return (math.lgamma(small) + (big - 0.5) * math.log1p(-small / total) - small * math.log(total) + small
            + _stirling(big) - _stirling(total))


def _log_upper(a: float, b: float, log_odds: float) -> float:
    """log I_x(a, b), the lower tail of Beta(a, b) at x = 1 / (1 + e^log_odds), for x below the mean."""
    log_x = -float(np.logaddexp(0.0, log_odds))
    log_1mx = -float(np.logaddexp(0.0, -log_odds))
    x = math.exp(log_x)
    front = a * log_x + b * log_1mx - math.log(a) - log_beta(a, b)
    # Lentz's evaluation of 1/(1+ d1/(1+ d2/(1+ ...))), the incomplete beta's fraction (NR §6.4).
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, CF_STEPS):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < CF_TOL:
            break
    return front + math.log(h)


def log_beta_cdf(a: float, b: float, log_odds: float) -> float:
    """log I_x(a, b), the regularized incomplete beta at x = 1 / (1 + e^log_odds), anywhere in (0, 1): the
    continued fraction of I_x(a, b) below the mean, else of I_{1−x}(b, a), whose complement is not small."""
    if 1.0 / (1.0 + math.exp(min(log_odds, 700.0))) < (a + 1.0) / (a + b + 2.0):
        return _log_upper(a, b, log_odds)
    return math.log1p(-math.exp(_log_upper(b, a, -log_odds)))


def _log_f_tail(log_odds: float, df1: float, df2: float) -> float:
    """log P(F(df1, df2) > f), where log_odds = log(df1·f/df2)."""
    return log_beta_cdf(df2 / 2.0, df1 / 2.0, log_odds)


def log_f_sf(f_value: float, df1: float, df2: float) -> float:
    """The natural log of P(F(df1, df2) > f_value); NaN where the statistic is missing."""
    if math.isnan(f_value) or not (df1 > 0 and df2 > 0):
        return math.nan
    if math.isinf(f_value):
        return -math.inf
    if f_value <= 0.0:
        return 0.0
    return _log_f_tail(math.log(f_value) + math.log(df1) - math.log(df2), df1, df2)


def f_p_value(f_value: float, df1: float, df2: float) -> float:
    """P(F(df1, df2) > f_value) as R's ``pf(f, df1, df2, lower.tail = FALSE)``, tiny values included."""
    return math.exp(log_f_sf(f_value, df1, df2))


def t_p_value(t_value: float, df: float) -> float:
    """The two-sided p of a t statistic, ``2 * pt(-|t|, df)`` as R's ``summary.lm``: P(F(1, df) > t²)."""
    if math.isnan(t_value) or not df > 0:
        return math.nan
    if math.isinf(t_value):
        return 0.0
    if t_value == 0.0:
        return 1.0
    return math.exp(_log_f_tail(2.0 * math.log(abs(t_value)) - math.log(df), 1.0, df))


def log_worth(f_value: float, df1: float, df2: float) -> float:
    """−log10 of the F test's p-value, right however small p is."""
    return -log_f_sf(f_value, df1, df2) / math.log(10.0)


def log_t_upper(log_t: float, df: float) -> float:
    """log P(T > t) for t = e^log_t > 0 on ``df`` degrees of freedom (half the F(1, df) tail of t²)."""
    return log_beta_cdf(df / 2.0, 0.5, 2.0 * log_t - math.log(df)) - math.log(2.0)


def log_t_central(log_t: float, df: float) -> float:
    """log P(|T| < t) for t = e^log_t > 0: I_y(1/2, df/2) at y = t²/(df + t²), accurate where it is small."""
    return log_beta_cdf(0.5, df / 2.0, math.log(df) - 2.0 * log_t)


#: The incomplete gamma's series and continued fraction stop on this relative change.
GAMMA_TOL = 1e-17
GAMMA_STEPS = 100_000


def _gamma_series(a: float, x: float) -> float:
    """Σ x^n / ((a+1)…(a+n)), n ≥ 0: P(a, x) = x^a e^(−x) / Γ(a+1) times this (x < a + 1)."""
    term = total = 1.0
    for n in range(1, GAMMA_STEPS):
        term *= x / (a + n)
        total += term
        if term < GAMMA_TOL * total:
            break
    return total


def _gamma_fraction(a: float, x: float) -> float:
    """Lentz's evaluation of Q(a, x)·Γ(a) / (x^a e^(−x)) = 1/(x+1−a− 1·(1−a)/(x+3−a− …)) (NR §6.2; x ≥ a + 1)."""
    b = x + 1.0 - a
    c, d = 1.0 / _TINY, 1.0 / b
    h = d
    for i in range(1, GAMMA_STEPS):
        numerator = -i * (i - a)
        b += 2.0
        d = numerator * d + b
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = b + numerator / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        if abs(d * c - 1.0) < GAMMA_TOL:
            break
    return h


def chi_square_sf(statistic: float, df: float) -> float:
    """P(χ²(df) > statistic), R's ``pchisq(statistic, df, lower.tail = FALSE)``: Q(df/2, statistic/2), to
    ~1e-15 relative down to the smallest normal doubles (below them, 0 or a subnormal, as R)."""
    if math.isnan(statistic) or not df > 0:
        return math.nan
    if statistic <= 0.0:
        return 1.0
    if math.isinf(statistic):
        return 0.0
    a, x = df / 2.0, statistic / 2.0
    if x < a + 1.0:
        power = _power_over_gamma(a, x)
        front = math.exp(-x) * power / a if power is not None else math.exp(a * math.log(x) - x - math.lgamma(a + 1.0))
        lower = front * _gamma_series(a, x)
        return max(1.0 - lower, 0.0)
    # e^(−x) · x^a/Γ(a) · fraction: x is exact, so exp(−x/2) is right to an ulp however large x is; x^a/Γ(a)
    # is a product of a few correctly rounded factors where df is a whole number (always, in a test).
    fraction = _gamma_fraction(a, x)
    power = _power_over_gamma(a, x) if x < 1400.0 else None
    if power is not None:
        half = math.exp(-x / 2.0)
        return half * power * fraction * half
    return math.exp(a * math.log(x) - math.lgamma(a) + math.log(fraction) - x)


#: x^a / Γ(a) is multiplied out up to this a (df = 400); past it, and where it would overflow, logs.
PRODUCT_UP_TO = 200


def _power_over_gamma(a: float, x: float) -> float | None:
    """x^a / Γ(a) for a whole or half-whole a ≤ PRODUCT_UP_TO, as a product (a rounding per factor, none of
    the ~|log| · 1e-16 of exp(a·log x − lgamma a)); None otherwise or past 1e300."""
    twice = 2.0 * a
    if twice != math.floor(twice) or a > PRODUCT_UP_TO:
        return None
    whole = twice % 2.0 == 0.0
    value = x if whole else math.sqrt(x / math.pi)
    for j in range(1, int(a) if whole else int(a) + 1):
        value *= x / (j if whole else j - 0.5)
    return value if value < 1e300 else None
