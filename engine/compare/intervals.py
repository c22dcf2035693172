"""Bootstrap intervals for benchmark figures, so a reader sees when two strategies differ by less than their runs'
noise (issue 32).

Percentile bootstrap over the repetitions: each resample draws the runs again with replacement and recomputes the
figure. The generator is seeded, so the same runs always give the same interval. Two methods run with common
random numbers (the same seed per repetition) are compared *paired*: a resample draws the same repetitions for
both, which removes the noise they share (the same first design, the same random start).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: Resamples per interval: the 2.5% and 97.5% quantiles move by well under 1% of the interval's width beyond this.
RESAMPLES = 2000
LEVEL = 0.95


def _quantiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def _resampled_means(values: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """The mean of ``values`` under each row of ``picks`` (indices into it)."""
    means: np.ndarray = values[picks].mean(axis=1)
    return means


def mean_interval(values: np.ndarray, *, level: float = LEVEL, resamples: int = RESAMPLES,
                  seed: int = 0) -> tuple[float, float]:
    """The bootstrap interval of the mean of ``values`` (non-finite values left out; NaN bounds when none is left)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if len(finite) == 0:
        return float("nan"), float("nan")
    if len(finite) == 1:
        return float(finite[0]), float(finite[0])
    picks = np.random.default_rng(seed).integers(0, len(finite), size=(resamples, len(finite)))
    low, high = _quantiles(_resampled_means(finite, picks), level)
    smallest, largest = float(finite.min()), float(finite.max())
    low = min(max(low, smallest), largest)  # a sum's rounding can step past the values' range
    return low, max(min(high, largest), low)


def difference_interval(a: np.ndarray, b: np.ndarray, *, level: float = LEVEL, resamples: int = RESAMPLES,
                        seed: int = 0) -> tuple[float, float]:
    """The bootstrap interval of mean(a) − mean(b), for independent runs (non-finite values left out)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = (_resampled_means(a, rng.integers(0, len(a), size=(resamples, len(a))))
             - _resampled_means(b, rng.integers(0, len(b), size=(resamples, len(b)))))
    return _quantiles(draws, level)


def geo_mean_ratio_interval(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray] | None = None, *,
                            paired: bool = False, level: float = LEVEL, resamples: int = RESAMPLES,
                            seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high) of the geometric mean over spaces of each space's mean (``a`` alone), or of the ratio
    of two such geometric means (``a`` ÷ ``b``, the spaces of ``a``). Runs are resampled within each space; with
    ``paired`` the same repetitions of both (their arrays must then have equal lengths, run i of each sharing a
    seed)."""
    rng = np.random.default_rng(seed)
    estimate = np.zeros(())
    draws = np.zeros(resamples)
    for space, values in a.items():
        x = np.asarray(values, dtype=float)
        picks = rng.integers(0, len(x), size=(resamples, len(x)))
        log_a, draw_a = np.log(x.mean()), np.log(_resampled_means(x, picks))
        if b is None:
            estimate, draws = estimate + log_a, draws + draw_a
            continue
        y = np.asarray(b[space], dtype=float)
        if paired and len(y) != len(x):
            raise ValueError(f"paired intervals need as many runs of each method on {space}: {len(x)} and {len(y)}")
        other = picks if paired else rng.integers(0, len(y), size=(resamples, len(y)))
        estimate = estimate + log_a - np.log(y.mean())
        draws = draws + draw_a - np.log(_resampled_means(y, other))
    n = max(len(a), 1)
    low, high = _quantiles(draws / n, level)
    return float(np.exp(estimate / n)), float(np.exp(low)), float(np.exp(high))
