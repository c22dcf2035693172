"""Greedy per-parameter (coordinate) search for a simulator table: the baseline of Andreas Abel's DiffTune fork
(``train_simple``, difftune.md §7), designed here from its description. It needs no surrogate, only simulator
calls, so it shows what DiffTune's surrogate buys at the same budget.

Order: the globals (dispatch width, ROB size, and a forwarding table's ``FORWARDING`` advances), then each opcode
key of the blocks, the key found in the most blocks first (the seed orders keys found in equally many), with its
latency, µops and the net cycles of each unit or group its start row uses (``port:KEY:RESOURCE``; 0 removes it, a
later pass may bring it back).

Candidates for a value v: §3's range of its field (``calibration.GRID``) and v ± 1, v ± 2, v // 2, 2v, so a
value outside the range (a 20-cycle divide) still moves; each within its field's floor and ceiling (the table's
bounds), nearest to v first.
Every candidate of a parameter is tried and the best kept only when it lowers the training MAPE, so the MAPE
never rises. A row change re-simulates only the blocks holding that key (what makes a pass affordable), a
change of a ``FORWARDING`` advance only the blocks with a fed load, another global change every block. Passes repeat
until one improves nothing, the MAPE is 0, or the next candidate would overrun the budget.

With ``sample``, each parameter is decided on at most that many of the blocks holding it, drawn afresh each time:
a common opcode (held by thousands of blocks) then costs no more than a rare one, so the budget reaches every
parameter instead of the first few, and every training block still counts over the search (a fixed subsample of
the blocks visits as many parameters but fits those few blocks). The errors of holders left out of a draw are
then stale; a later draw re-simulates the stale ones it picks before comparing, so every decision compares the
current table with the candidate on the same blocks. The MAPE the curve reports is an estimate over the latest
known errors, and may rise when stale errors are refreshed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.errors import UserError, brief
from engine.surrogates.difftune.calibration import CEILING, FLOOR, GLOBALS, GRID, Parameter, blocks_by_key, value, with_values
from engine.surrogates.difftune.categories import harness_forwarding
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.search_result import SearchResult, ape, check_budget, check_problem, curve
from engine.surrogates.difftune.simulate import simulate

#: The globals only blocks with a load fed by a store feel.
FORWARDING = ("forwarding_advance", "stack_forwarding_advance")
#: A candidate must lower the MAPE by more than this (float noise is no improvement).
TOLERANCE = 1e-12


def candidates(p: Parameter, current: int) -> list[int]:
    """Values to try for ``p`` at ``current``, nearest first (ties: the smaller value)."""
    moves = (current - 2, current - 1, current + 1, current + 2, current // 2, 2 * current)
    pool = {v for v in (*GRID[p.field], *moves) if FLOOR[p.field] <= v <= CEILING[p.field] and v != current}
    return sorted(pool, key=lambda v: (abs(v - current), v))


def visiting_order(holders: dict[str, np.ndarray], start: ParamTable, seed: int) -> list[Parameter]:
    """Globals, then per key (most blocks first, ties shuffled by ``seed``) latency, µops and used ports."""
    keys = list(holders)
    shuffled = [keys[i] for i in np.random.default_rng(seed).permutation(len(keys))]
    ordered = sorted(shuffled, key=lambda k: -len(holders[k]))
    forwarding = (Parameter("forwarding_advance"), Parameter("stack_forwarding_advance")) if start.memory_forwarding else ()
    return [*(Parameter(g) for g in GLOBALS), *forwarding,
            *(p for k in ordered for p in (Parameter("latency", k), Parameter("uops", k),
                                           *(Parameter("port", k, r) for r, _ in start.rows[k].port_cycles)))]


class _Greedy:
    """The search's state: the table, its per-block errors and the calls spent, with the best-so-far curve."""

    def __init__(self, blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, budget: int,
                 sample: int | None, seed: int) -> None:
        self.blocks, self.truth, self.budget, self.sample = blocks, truth, budget, sample
        self.holders = blocks_by_key(blocks)
        self.every = np.arange(len(blocks))
        #: The blocks a ``FORWARDING`` advance can move: those with a load fed by a store.
        self.fed = np.array([i for i, b in enumerate(blocks) if start.memory_forwarding and harness_forwarding(b).loads],
                            dtype=np.int64)
        self.table = start
        self.errors = ape(simulate(blocks, start), truth)
        self.stale = np.zeros(len(blocks), dtype=bool)  # errors of an older table (``sample`` only)
        self.rng = np.random.default_rng(seed)
        self.calls = len(blocks)
        self.spent, self.best = [self.calls], [float(self.errors.mean())]
        self.done = False  # budget spent, or the MAPE is 0 and nothing is left to gain

    def draw(self, holders: np.ndarray) -> np.ndarray | None:
        """The blocks ``p`` is decided on, their errors under the current table (stale ones re-simulated); None
        when the budget cannot pay for the refresh."""
        if self.sample is None or len(holders) <= self.sample:
            affected = holders
        else:
            affected = np.sort(self.rng.choice(holders, self.sample, replace=False))
        refresh = affected[self.stale[affected]]
        if len(refresh):
            if self.calls + len(refresh) > self.budget:
                return None
            self.errors[refresh] = ape(simulate([self.blocks[int(i)] for i in refresh], self.table), self.truth[refresh])
            self.stale[refresh] = False
            self.calls += len(refresh)
            self.spent.append(self.calls)
            self.best.append(float(self.errors.mean()))
        return affected

    def improve(self, p: Parameter) -> bool:
        """Try ``p``'s candidates (while the budget lasts); keep the best if it lowers the MAPE."""
        holders = self.holders[p.key] if p.key else self.fed if p.field in FORWARDING else self.every
        if not len(holders):  # an advance no block feels
            return False
        affected = self.draw(holders)
        if affected is None:
            self.done = True
            return False
        subset = [self.blocks[int(i)] for i in affected]
        found: tuple[ParamTable, np.ndarray] | None = None
        for v in candidates(p, value(self.table, p)):
            if self.calls + len(affected) > self.budget or self.best[-1] == 0:
                self.done = True
                break
            trial = with_values(self.table, {p: v})
            errors = self.errors.copy()
            errors[affected] = ape(simulate(subset, trial), self.truth[affected])
            self.calls += len(affected)
            score = float(errors.mean())
            improves = score < self.best[-1] - TOLERANCE
            if improves:
                found = trial, errors
            self.spent.append(self.calls)
            self.best.append(score if improves else self.best[-1])
        if found is not None:
            self.table, self.errors = found
            self.stale[np.setdiff1d(holders, affected, assume_unique=True)] = True
        return found is not None


def greedy_search(blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, budget: int, *,
                  seed: int = 0, sample: int | None = None,
                  on_progress: Callable[[int, float], None] | None = None) -> SearchResult:
    """Coordinate search from ``start`` for a table whose simulation of ``blocks`` matches ``truth`` (cycles per
    100 iterations); ``budget`` counts simulator calls (one block under one table), the start's first evaluation
    included; ``sample`` caps the blocks each decision re-simulates (module docstring).
    ``on_progress(calls, best MAPE)`` after each parameter is tried."""
    values = check_problem(blocks, truth, start)
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 1):
        raise UserError(f"sample: {brief(sample)} blocks per decision; expected a whole number from 1")
    search = _Greedy(blocks, values, start, check_budget(budget, len(blocks)), sample, seed)
    order = visiting_order(search.holders, start, seed)
    improved = True
    while improved and not search.done:
        improved = False
        for p in order:
            improved = search.improve(p) or improved
            if on_progress is not None:
                on_progress(search.calls, search.best[-1])
            if search.done:
                break
    return SearchResult(search.table, search.calls, curve(search.spent, search.best))
