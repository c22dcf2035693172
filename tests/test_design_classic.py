"""Full factorial, uniform random and Latin hypercube designs; design types and size rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.design import (
    CandidateTable,
    design_types,
    full_factorial,
    latin_hypercube,
    lhs_unit,
    random_design,
    suggest_size,
)
from engine.errors import UserError
from engine.space.factors import Factor, Space

SPACE = Space(
    [
        Factor("tile", "ordinal", (1, 2, 4, 8, 16, 32)),
        Factor("unroll", "integer", tuple(range(1, 9))),
        Factor("vec", "boolean", (False, True)),
        Factor("layout", "categorical", ("row", "col", "blocked")),
    ],
    ["tile * unroll <= 64"],
)


def test_full_factorial_is_every_valid_configuration():
    result = full_factorial(SPACE)
    pd.testing.assert_frame_equal(result.design, SPACE.enumerate())
    shuffled = full_factorial(SPACE, seed=3)
    assert sorted(map(tuple, shuffled.design.to_numpy())) == sorted(map(tuple, result.design.to_numpy()))
    assert not shuffled.design.equals(result.design)


def test_random_design_is_distinct_valid_and_reproducible():
    first = random_design(SPACE, 40, seed=5)
    assert len(first.design.drop_duplicates()) == 40 and SPACE.valid_mask(first.design).all()
    pd.testing.assert_frame_equal(first.design, random_design(SPACE, 40, seed=5).design)
    assert not first.design.equals(random_design(SPACE, 40, seed=6).design)
    with pytest.raises(UserError, match="runs 0"):
        random_design(SPACE, 0)


def test_candidate_table_designs_report_candidate_rows():
    table = SPACE.enumerate().assign(time=np.arange(len(SPACE.enumerate())) * 0.5)
    source = CandidateTable(table, ["tile", "unroll", "vec", "layout"])
    result = random_design(source, 10, seed=1)
    assert len(set(result.rows)) == 10
    pd.testing.assert_frame_equal(result.design, table.loc[list(result.rows), source.names].reset_index(drop=True))
    assert len(full_factorial(table).design) == len(table)


@pytest.mark.parametrize("runs, k", [(1, 3), (7, 2), (50, 6)])
def test_lhs_has_one_point_per_stratum(runs, k):
    points = lhs_unit(runs, k, seed=9)
    assert points.shape == (runs, k) and ((points >= 0) & (points < 1)).all()
    for column in points.T:
        assert sorted(np.floor(column * runs).astype(int)) == list(range(runs))


def test_lhs_maximin_keeps_the_most_spread_hypercube():
    from scipy.spatial.distance import pdist

    best = pdist(lhs_unit(20, 3, seed=1, tries=30)).min()
    single = [pdist(lhs_unit(20, 3, seed=s, tries=1)).min() for s in range(30)]
    assert best >= np.median(single)


def test_lhs_over_level_indices_drops_and_counts_invalid_points():
    result = latin_hypercube(SPACE, 30, seed=2)
    info = result.info
    assert info["requested"] == 30
    assert info["dropped_invalid"] > 0
    assert result.runs == 30 - info["dropped_invalid"] - info["dropped_duplicate"]
    assert SPACE.valid_mask(result.design).all() and not result.design.duplicated().any()
    pd.testing.assert_frame_equal(result.design, latin_hypercube(SPACE, 30, seed=2).design)


def test_lhs_points_are_the_unit_hypercube_rounded_onto_level_indices():
    space = Space([Factor("a", "integer", tuple(range(10))), Factor("b", "ordinal", tuple(2.0**i for i in range(4)))])
    result = latin_hypercube(space, 10, seed=4)
    index = np.rint(lhs_unit(10, 2, seed=4) * [9, 3]).astype(int)
    keep = ~pd.DataFrame(index).duplicated().to_numpy()
    assert result.design["a"].tolist() == index[keep, 0].tolist()
    assert result.design["b"].tolist() == [2.0**i for i in index[keep, 1]]
    assert result.info["dropped_duplicate"] == int((~keep).sum())


def test_design_types_and_size_rules():
    names = [t.name for t in design_types()]
    assert names == ["factorial", "random", "lhs", "pb", "fracfact", "dopt"]
    assert [t.name for t in design_types() if t.needs_formula] == ["dopt"]
    assert suggest_size(8) == 16
    assert suggest_size(32, "orio") == 38  # bicgkernel: 31 terms → round(37.2) + 1
    assert suggest_size("~ tile + I(tile^2) + layout + vec", "2k", SPACE) == 12  # k = 1 + 1 + 1 + 2 + 1
    assert suggest_size("~ tile + I(tile^2) + layout + vec", "orio", SPACE) == 6  # 4 terms → round(4.8) + 1
    with pytest.raises(UserError, match="size rule"):
        suggest_size(8, "3k")
    with pytest.raises(UserError, match="give the space or candidates"):
        suggest_size("~ tile")
