"""Upper tails of the F distribution in log space, where the p-value itself underflows a double.

An F of 3000 on (2, 1000) df has p ≈ 1e-423: scipy's ``f.sf`` returns 0 and ``f.logsf`` −inf, and a
LogWorth (−log10 p) built on them is capped or infinite. R's ``pf(..., log.p = TRUE)`` stays right;
so does the incomplete-beta series used here: P(F > f) = I_x(d2/2, d1/2) with x = d2/(d2 + d1·f),
and for small x, I_x(a, b) = x^a (1−x)^b / (a·B(a, b)) · ₂F₁(a+b, 1; a+1; x).
"""

from __future__ import annotations

import math

from scipy import special, stats

#: Below this, the series replaces scipy's survival function (which is exact above it).
SERIES_BELOW = 1e-280


def log_f_sf(f_value: float, df1: float, df2: float) -> float:
    """The natural log of P(F(df1, df2) > f_value); NaN where the statistic is missing."""
    if not (math.isfinite(f_value) and df1 > 0 and df2 > 0):
        return math.nan if not math.isinf(f_value) else -math.inf
    p = float(stats.f.sf(f_value, df1, df2))
    if p > SERIES_BELOW:
        return math.log(p)
    a, b = df2 / 2.0, df1 / 2.0
    x = df2 / (df2 + df1 * f_value)
    term = total = 1.0
    k = 0
    while term > 1e-17 * total and k < 100_000:  # ₂F₁'s terms shrink by about x per step
        term *= (a + b + k) * x / (a + 1.0 + k)
        total += term
        k += 1
    return a * math.log(x) + b * math.log1p(-x) - math.log(a) - float(special.betaln(a, b)) + math.log(total)


def log_worth(f_value: float, df1: float, df2: float) -> float:
    """−log10 of the F test's p-value, right however small p is."""
    return -log_f_sf(f_value, df1, df2) / math.log(10.0)
