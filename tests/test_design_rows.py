"""optimal_rows: engine.design's exchange on a prebuilt model matrix (what strategies call)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine.design import criteria, optimal_design, optimal_rows
from engine.errors import UserError
from engine.model.formula import model_matrix

FORMULA = "~ a + b + I(b^2) + c + a:c"


@pytest.fixture(scope="module")
def grid() -> tuple[pd.DataFrame, np.ndarray]:
    frame = pd.DataFrame(list(itertools.product([-1, 0, 1], [-1, -0.5, 0, 0.5, 1], [1, 2, 4, 8])), columns=["a", "b", "c"])
    return frame, model_matrix(FORMULA, frame).X


def test_matches_optimal_design_on_the_same_matrix(grid):
    frame, X = grid
    reference = optimal_design(frame, FORMULA, 12, seed=0)
    rows = optimal_rows(X, 12, seed=0)
    assert len(set(rows.tolist())) == 12
    assert criteria(X[rows], X).D == pytest.approx(reference.criteria["D"], rel=1e-9)


def test_forced_rows_come_first_and_excluded_rows_never(grid):
    _, X = grid
    rows = optimal_rows(X, 8, forced=[7, 3], exclude=range(20, 40), seed=np.random.default_rng(1), repeats=1, polish=0)
    assert rows[:2].tolist() == [3, 7] and len(set(rows.tolist())) == 10
    assert not set(rows[2:].tolist()) & set(range(20, 40))


def test_aliased_columns_are_dropped_as_r_does(grid):
    _, X = grid
    aliased = np.column_stack([X, 2.0 * X[:, 1], X[:, 1] + X[:, 3]])  # copies of earlier columns
    assert optimal_rows(aliased, 12, seed=3).tolist() == optimal_rows(X, 12, seed=3).tolist()


def test_bad_matrices_and_sizes_are_one_line_errors(grid):
    _, X = grid
    bad = X.copy()
    bad[4, 2] = np.inf
    with pytest.raises(UserError, match="finite"):
        optimal_rows(bad, 10)
    with pytest.raises(UserError, match="every column is zero"):
        optimal_rows(np.zeros((10, 3)), 4)
    with pytest.raises(UserError, match="more than the"):
        optimal_rows(X, len(X) + 1)
