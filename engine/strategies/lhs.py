"""LHS: a maximin Latin hypercube over the level-index box (docs/dlmt.md §4.3).

Each factor spans [0, L−1] in level indices; a Latin hypercube of ``points`` points is drawn
``iterations`` times and the one with the largest smallest pairwise distance is kept (the design
page's :func:`engine.design.lhs.lhs_unit`, drawing from the strategy's generator); points are rounded
to the nearest index. Points that are not valid configurations come back ``invalid`` and are not
charged (the paper dropped them uncounted), so the budget used is the number of valid distinct
points. The answer is the best one measured.

Options (:attr:`LatinHypercube.OPTIONS`): ``points`` (None = enough for the budget: budget ÷ the
valid fraction of the space, when the domain knows it; the paper's budgets, 74-125 with median 99,
match its public script's 441 points on the Laplacian, whose valid fraction is 19.5 %),
``iterations`` (maximin candidates).
Deviation: the paper used R's ``DoE.wrapper::lhs.design``; the same distribution, not the same draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.design.lhs import lhs_unit
from engine.space.factors import Space
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option


class LatinHypercube(Strategy):
    name = "LHS"
    summary = "maximin Latin hypercube over level indices; invalid points are free"
    OPTIONS = (
        Option("points", None, "points of the hypercube (null: budget ÷ the valid fraction of the space)",
               "int", low=1, optional=True),
        Option("iterations", 5, "random hypercubes drawn; the one whose closest points are farthest apart is kept",
               "int", low=1),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        points = self.options["points"]
        if points is None:
            valid = (self.domain.n_candidates or self.domain.space.size) / self.domain.space.size
            points = int(np.ceil(self.budget / valid))
        self.points = int(points)
        self.iterations = int(self.options["iterations"])

    def _search(self) -> Search:
        unit = lhs_unit(self.points, len(self.domain.names), self.rng, self.iterations)
        span = (self.domain.n_levels - 1).astype(float)
        yield np.rint(unit * span).astype(np.int64)
