"""GS and GSR: greedy steepest descent over one-level moves, without and with restarts (dlmt.md §4.3).

GS starts from one uniformly random valid configuration; its neighbourhood is the ±1 level-index
move along each factor. The whole neighbourhood is measured (configurations known to be invalid,
i.e. outside the space's constraints or, for an exhaustive table, absent from it, are free: the
paper's a-priori check), and the search moves to the best neighbour when it is strictly better,
else stops. GSR restarts GS from fresh random valid starts until its budget is spent.

Option ``apriori`` (both): constraint expressions of the paper's a-priori check. Without it a
neighbour is run only when it is known valid (free otherwise). With it, a neighbour that is on the
grid and passes the check (and the space's constraints) is run even when it is not a known-valid
candidate, and one that then yields nothing (absent from an exhaustive table: a runtime failure) is
still charged: "A neighbour missing from the table still costs 1 but yields nothing" (dlmt.md §4.3).

Option ``recount`` (both): the paper's counter, which paid for every neighbour it evaluated, also
one measured before (the point just left is always a neighbour of the new one). Tunelab's ledger
answers those for free; ``recount=True`` charges them again, which reproduces the paper's GS budgets
(3–106, mean 22.17, against 19.2 without) and makes GSR's fixed 120 buy fewer new points.

Option ``ignore`` (both): factors whose change alone does not count as a move, so the search stops
after it. The original's "unchanged" test compared only 6 of the Laplacian's 7 factors and ignored
``lws_y`` (dlmt.md §4.3); ``ignore=["lws_y"]`` reproduces that quirk, which is what makes the
paper's GS so often stop early (its 6.46 mean slowdown). The paper's counters (GS stops at 119, GSR
spends 120) are budgets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option, shown, texts


def neighbours(domain: Domain, row: np.ndarray) -> np.ndarray:
    """The ±1 level moves of ``row`` that stay on the grid."""
    moves = []
    for j, count in enumerate(domain.n_levels):
        for step in (-1, 1):
            if 0 <= row[j] + step < count:
                moved = row.copy()
                moved[j] += step
                moves.append(moved)
    return np.array(moves, dtype=np.int64).reshape(-1, len(domain.names))


class GreedySearch(Strategy):
    name = "GS"
    summary = "steepest descent over one-level moves from one random start"
    OPTIONS = (
        Option("ignore", (), "factors whose change alone is not a move (the paper's GS ignored lws_y)",
               "list", rule=texts),
        Option("apriori", (), "constraint expressions of the paper's a-priori check (neighbours passing it are run)",
               "list", rule=texts),
        Option("recount", False, "charge neighbours evaluated before again, as the paper's counter did", "bool"),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        ignore, apriori = self.options["ignore"], self.options["apriori"]
        self.recount = bool(self.options["recount"])
        names = self.domain.names
        self.check = Space(self.domain.space.factors, apriori) if apriori else None
        if self.check is not None:
            self.free_statuses = frozenset()  # a run that passed the check and failed still cost 1
        for name in ignore:
            if name not in names:
                raise UserError(f"{self.name} option 'ignore' {shown(ignore)}: {name!r} is not a factor")
        self.counted = np.array([name not in set(ignore) for name in names])

    def _descend(self) -> Search:
        """Greedy descent from a fresh random valid start until no move improves (or the budget ends)."""
        measured, _ = self.measured(ok_only=False)
        start = self.domain.random_valid(1, self.rng, exclude=set(measured.tolist()))
        if not len(start):
            return
        result = yield start
        here, loss = start[0], result.loss[0]
        while self.used < self.budget:
            moves = neighbours(self.domain, here)
            moves = moves[self._runnable(moves)]
            if not len(moves):
                return
            again = sum(self.is_charged(code) for code in self.domain.encode(moves)) if self.recount else 0
            result = yield moves
            self.charge(again)
            best = int(np.argmin(result.loss))
            if not result.loss[best] < loss:
                return
            moved = np.any((moves[best] != here) & self.counted)
            here, loss = moves[best], result.loss[best]
            if not moved:
                return

    def _runnable(self, moves: np.ndarray) -> np.ndarray:
        """Neighbours to run: known valid, or (with ``apriori``) passing the a-priori check."""
        if self.check is None:
            return self.domain.valid(moves)
        columns = {f.name: f.level_array()[moves[:, j]] for j, f in enumerate(self.check.factors)}
        runnable: np.ndarray = self.domain.feasible(moves) & self.check.constraint_mask(columns, len(moves))
        return runnable

    def _search(self) -> Search:
        yield from self._descend()


class GreedyRestarts(GreedySearch):
    name = "GSR"
    summary = "greedy descent restarted from random valid starts until the budget is spent"

    def _search(self) -> Search:
        while self.used < self.budget:
            before = self.used
            yield from self._descend()
            if self.used == before:
                return
