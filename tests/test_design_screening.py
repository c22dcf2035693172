"""Plackett–Burman and fractional factorial designs: balance, orthogonality, resolution."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from engine.design import fractional_factorial, pb_runs, plackett_burman
from engine.design.hadamard import plackett_burman_matrix
from engine.errors import UserError
from engine.space.factors import Factor, Space


def _space(k: int, constraints=()) -> Space:
    return Space([Factor(f"x{i + 1}", "integer", (1, 2, 4, 8)) for i in range(k)], constraints)


@pytest.mark.parametrize("runs", [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 60, 64, 68, 72, 80, 84, 88, 96])
def test_pb_columns_are_balanced_and_pairwise_orthogonal(runs):
    M = plackett_burman_matrix(runs)
    assert M.shape == (runs, runs - 1) and set(np.unique(M)) == {-1, 1}
    assert (M.sum(axis=0) == 0).all()
    assert (M.T @ M == runs * np.eye(runs - 1)).all()


def test_pb12_is_the_paper_design(reference):
    case = json.loads((reference / "r_stats" / "pb12.json").read_text())
    names = [f"x{i}" for i in range(1, 9)] + ["d1", "d2", "d3"]
    expected = pd.DataFrame(case["data"])[names].to_numpy()
    result = plackett_burman(_space(8))
    assert result.coded.columns.tolist() == names
    assert (result.coded.to_numpy() == expected).all()
    assert result.info["dummies"] == ["d1", "d2", "d3"] and result.runs == 12
    # coded −1/+1 are the lowest/highest levels
    assert set(result.design["x1"]) == {1, 8}
    assert (result.design["x1"].to_numpy() == np.where(expected[:, 0] > 0, 8, 1)).all()


def test_pb_size_is_the_smallest_multiple_of_four_above_k():
    assert [pb_runs(k) for k in (1, 3, 4, 7, 8, 11, 12, 50)] == [4, 4, 8, 8, 12, 12, 16, 56]  # no 52 here
    result = plackett_burman(_space(5), seed=4)
    assert result.runs == 8 and result.info["dummies"] == ["d1", "d2"]
    assert sorted(map(tuple, result.coded.to_numpy())) == sorted(map(tuple, plackett_burman(_space(5)).coded.to_numpy()))
    with pytest.raises(UserError, match="multiple of 4 >= 6"):
        plackett_burman(_space(5), runs=4)


def test_pb_drops_and_counts_runs_that_violate_constraints():
    result = plackett_burman(_space(3, ["x1 <= x2"]))
    assert result.info["dropped_invalid"] == 1 and result.runs == 3
    assert (result.design["x1"] <= result.design["x2"]).all()


def _resolution_from_matrix(coded: pd.DataFrame) -> int | None:
    """Length of the shortest product of columns that is constant: found by brute force."""
    M = coded.to_numpy()
    for size in range(1, M.shape[1] + 1):
        for cols in itertools.combinations(range(M.shape[1]), size):
            if len(np.unique(M[:, list(cols)].prod(axis=1))) == 1:
                return size
    return None


@pytest.mark.parametrize("k, runs", [(3, 4), (4, 8), (5, 8), (6, 16), (7, 16), (7, 32), (8, 16), (9, 32), (10, 16), (11, 32)])
def test_fractional_factorial_resolution_is_as_claimed(k, runs):
    result = fractional_factorial(_space(k), runs=runs)
    assert result.runs == runs
    assert result.info["resolution"] == _resolution_from_matrix(result.coded)
    assert (result.coded.sum(axis=0) == 0).all()  # balanced
    M = result.coded.to_numpy()
    assert (M.T @ M == runs * np.eye(k)).all()  # main effects orthogonal


def test_known_best_designs_are_found():
    assert fractional_factorial(_space(5), runs=16).info["resolution"] == 5
    assert fractional_factorial(_space(8), runs=16).info["resolution"] == 4
    assert fractional_factorial(_space(7), runs=32).info["word_length_pattern"][3:5] == [1, 2]  # 2^(7−2) min. aberration


def test_user_generators_and_their_defining_relation():
    result = fractional_factorial(_space(5), generators=["x4 = x1*x2", "x5 = -x1:x3"], seed=2)
    assert result.runs == 8 and result.info["resolution"] == 3
    assert result.info["defining_relation"] == ["I = x1*x2*x4", "I = -x1*x3*x5", "I = -x2*x3*x4*x5"]
    coded = result.coded
    assert (coded["x4"] == coded["x1"] * coded["x2"]).all()
    assert (coded["x5"] == -coded["x1"] * coded["x3"]).all()


def test_full_factorial_when_runs_cover_every_combination():
    result = fractional_factorial(_space(3), runs=8)
    assert result.info["resolution"] is None and result.info["generators"] == []
    assert len(result.coded.drop_duplicates()) == 8


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"runs": 12}, "needs a power of two"),
        ({"runs": 64}, "more than the 32 runs"),
        ({"generators": ["x5 = x1*x9"]}, "unknown factor 'x9'"),
        ({"generators": ["x5 = x1"]}, "a single factor aliases two main effects"),
        ({"generators": ["x5 := x1*x2"]}, "expected 'factor = a*b*c'"),
        ({"generators": ["x5 = x1*x2", "x4 = x5*x1"]}, "only base (not generated) factors"),
        ({"generators": ["x5 = x1*x2"], "runs": 8}, "give 16 runs"),
    ],
)
def test_bad_fractional_factorial_requests(kwargs, message):
    with pytest.raises(UserError) as info:
        fractional_factorial(_space(5), **kwargs)
    assert message in str(info.value)
