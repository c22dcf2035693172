"""Bootstrap intervals of benchmark figures (issue 32): they cover what they estimate, tighten with more runs,
are reproducible, and pairing removes the noise two methods share."""

from __future__ import annotations

import numpy as np
import pytest

from engine.compare.intervals import difference_interval, geo_mean_ratio_interval, mean_interval


def test_the_mean_interval_covers_the_true_mean_about_95_times_in_100():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(200):
        low, high = mean_interval(1.0 + rng.exponential(0.2, size=40), resamples=500, seed=int(rng.integers(1 << 30)))
        covered += low <= 1.2 <= high
    assert 0.88 <= covered / 200 <= 0.99  # a percentile bootstrap on 40 skewed runs runs slightly short of 95%


def test_more_runs_give_a_narrower_interval_and_the_same_runs_the_same_interval():
    rng = np.random.default_rng(2)
    few, many = 1.0 + rng.exponential(0.2, 20), 1.0 + rng.exponential(0.2, 320)
    assert np.diff(mean_interval(many)) < 0.5 * np.diff(mean_interval(few))
    assert mean_interval(few) == mean_interval(few)
    assert mean_interval(np.array([np.inf, 1.5])) == (1.5, 1.5)  # a run that found nothing is left out
    assert np.isnan(mean_interval(np.array([np.inf]))).all()


def test_a_difference_interval_holds_zero_only_when_the_methods_are_alike():
    rng = np.random.default_rng(3)
    a, same, worse = (1.0 + rng.exponential(0.1, 60) for _ in range(3))
    low, high = difference_interval(same, a)
    assert low < 0 < high
    low, _ = difference_interval(worse + 0.2, a)
    assert low > 0


def test_pairing_removes_shared_noise_from_a_ratio_of_geometric_means():
    rng = np.random.default_rng(4)
    shared = {space: 1.0 + rng.exponential(0.3, 30) for space in ("a", "b", "c")}
    better = {space: 0.97 * v for space, v in shared.items()}  # the same runs, 3% better each
    estimate, low, high = geo_mean_ratio_interval(better, shared, paired=True)
    assert estimate == pytest.approx(0.97) and high - low < 1e-9
    _, low_u, high_u = geo_mean_ratio_interval(better, shared)
    assert low_u < 0.97 < high_u and high_u - low_u > 0.05
    alone, low1, high1 = geo_mean_ratio_interval(shared)
    assert low1 < alone < high1
    assert alone == pytest.approx(np.exp(np.mean([np.log(v.mean()) for v in shared.values()])))
    with pytest.raises(ValueError, match="paired"):
        geo_mean_ratio_interval({"a": np.ones(3)}, {"a": np.ones(4)}, paired=True)
