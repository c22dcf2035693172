"""LHS: a maximin Latin hypercube over the level-index box (docs/dlmt.md §4.3).

Each factor spans [0, L−1] in level indices; a Latin hypercube of ``points`` points is drawn
``iterations`` times and the one with the largest smallest pairwise distance is kept (pyDOE's
``criterion="maximin"``); points are rounded to the nearest index. Points that are not valid
configurations come back ``invalid`` and are not charged (the paper dropped them uncounted), so the
budget used is the number of valid distinct points. The answer is the best one measured.

Options: ``points`` (None = enough for the budget: budget ÷ the valid fraction of the space, when
the domain knows it; the paper's budgets, 74-125 with median 99, match its public script's 441
points on the Laplacian, whose valid fraction is 19.5 %), ``iterations`` (maximin candidates).
Deviation: the paper used R's ``DoE.wrapper::lhs.design``; the same distribution, not the same draws.
"""

from __future__ import annotations

import numpy as np

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies.base import Strategy
from engine.strategies.domain import Domain


def maximin_lhs(n: int, dims: int, rng: np.random.Generator, iterations: int = 5) -> np.ndarray:
    """Points in [0, 1)^dims: the best of ``iterations`` random Latin hypercubes by min distance."""
    best, best_score = None, -np.inf
    for _ in range(max(1, iterations)):
        strata = np.argsort(rng.random((n, dims)), axis=0)
        points = (strata + rng.random((n, dims))) / n
        if n < 2:
            return points
        sq = np.sum(points**2, axis=1)
        d2 = sq[:, None] + sq[None, :] - 2.0 * points @ points.T
        score = np.min(d2[np.triu_indices(n, 1)])
        if score > best_score:
            best, best_score = points, score
    return best


class LatinHypercube(Strategy):
    name = "LHS"
    summary = "maximin Latin hypercube over level indices; invalid points are free"

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 *, points: int | None = None, iterations: int = 5) -> None:
        super().__init__(domain, budget, seed, direction)
        if points is not None and points < 1:
            raise UserError(f"LHS points {points!r} must be >= 1")
        if points is None:
            valid = (self.domain.n_candidates or self.domain.space.size) / self.domain.space.size
            points = int(np.ceil(self.budget / valid))
        self.points = int(points)
        self.iterations = int(iterations)

    def _search(self):
        unit = maximin_lhs(self.points, len(self.domain.names), self.rng, self.iterations)
        span = (self.domain.n_levels - 1).astype(float)
        yield np.rint(unit * span).astype(np.int64)
