"""Maximin Latin hypercube over level indices, as the CCGrid'19 LHS baseline used it.

``DoE.wrapper::lhs.design(type = "maximin")`` over the box of level indices [0, L−1] of each factor;
points are rounded to the nearest index and mapped to level values. Configurations that violate
the constraints (or are missing from a candidate table) are dropped and counted, so the design
can have fewer runs than asked for; repeated configurations after rounding are dropped too.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy.spatial.distance import pdist

from engine.design.result import DesignResult
from engine.design.source import CandidateTable, as_source
from engine.errors import UserError
from engine.space.factors import Space


def lhs_unit(runs: int, k: int, seed: int | np.random.Generator | None = None, tries: int = 20) -> np.ndarray:
    """A runs × k Latin hypercube in [0, 1): each column has exactly one point in each of the
    ``runs`` equal strata. Of ``tries`` random hypercubes, the one with the largest smallest
    pairwise distance (maximin) is kept. ``seed`` may be a Generator (the LHS strategy passes its
    own, so its draws continue that stream); this is the one maximin LHS of the engine."""
    rng = np.random.default_rng(seed)
    best, best_dist = None, -1.0
    for _ in range(max(1, tries)):
        strata = np.argsort(rng.random((runs, k)), axis=0)
        points = (strata + rng.random((runs, k))) / runs
        dist = pdist(points).min() if runs > 1 else 0.0
        if dist > best_dist:
            best, best_dist = points, dist
    assert best is not None  # a distance is >= 0 > the initial -1
    return best


def latin_hypercube(
    source: Space | pd.DataFrame, runs: int, seed: int | None = None, tries: int = 20
) -> DesignResult:
    """Maximin LHS of ``runs`` points over the level indices of ``source``'s factors."""
    started = time.perf_counter()
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise UserError(f"runs {runs!r} must be a positive integer")
    src = as_source(source)
    span = np.array([f.n_levels - 1 for f in src.factors], dtype=float)
    index = np.rint(lhs_unit(runs, len(span), seed, tries) * span).astype(np.int64)
    design = src.from_level_index(index)
    valid = src.valid_mask(design)
    unique = ~pd.DataFrame(index).duplicated().to_numpy()
    keep = valid & unique
    rows = None
    if isinstance(src, CandidateTable):
        rows = tuple(int(r) for r in src.rows_of(design[keep]))
    return DesignResult(
        kind="lhs",
        design=design[keep].reset_index(drop=True),
        seconds=time.perf_counter() - started,
        rows=rows,
        info={"requested": runs, "dropped_invalid": int((~valid).sum()), "dropped_duplicate": int((valid & ~unique).sum())},
    )
