"""The two designs that need no theory: every valid configuration, and a uniform random sample."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from engine.design.result import DesignResult
from engine.design.source import CandidateTable, as_source
from engine.errors import UserError
from engine.space.factors import Space


def full_factorial(source: Space | pd.DataFrame, seed: int | None = None) -> DesignResult:
    """All valid configurations; in standard order, or in a random run order when ``seed`` is given
    (randomised run order protects effects from drifts of the machine over time)."""
    started = time.perf_counter()
    src = as_source(source)
    rows = src.distinct_rows() if isinstance(src, CandidateTable) else None
    design = src.enumerate()
    if seed is not None:
        order = np.random.default_rng(seed).permutation(len(design))
        design = design.iloc[order].reset_index(drop=True)
        rows = rows[order] if rows is not None else None
    return DesignResult(
        kind="factorial",
        design=design,
        seconds=time.perf_counter() - started,
        rows=None if rows is None else tuple(int(r) for r in rows),
        info={"grid_size": src.size},
    )


def random_design(source: Space | pd.DataFrame, runs: int, seed: int | None = None) -> DesignResult:
    """``runs`` distinct valid configurations drawn uniformly at random, reproducible by ``seed``."""
    started = time.perf_counter()
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise UserError(f"runs {runs!r} must be a positive integer")
    src = as_source(source)
    if isinstance(src, CandidateTable):
        rows = src.sample_rows(runs, seed)
        design = src.frame.loc[rows, src.names].reset_index(drop=True)
        row_tuple = tuple(int(r) for r in rows)
    else:
        design, row_tuple = src.sample(runs, seed), None
    return DesignResult(kind="random", design=design, seconds=time.perf_counter() - started, rows=row_tuple)
