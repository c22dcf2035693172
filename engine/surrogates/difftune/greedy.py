"""Greedy per-parameter (coordinate) search for a simulator table: the baseline of Andreas Abel's DiffTune fork
(``train_simple``, difftune.md §7), designed here from its description. It needs no surrogate, only simulator
calls, so it shows what DiffTune's surrogate buys at the same budget.

Order: the globals (dispatch width, ROB size), then each opcode key of the blocks, the key found in the most
blocks first (the seed orders keys found in equally many), with its latency, µops and the net cycles of each
unit or group its start row uses (``port:KEY:RESOURCE``; 0 removes it, a later pass may bring it back).

Candidates for a value v: §3's range of its field (``calibration.GRID``) and v ± 1, v ± 2, v // 2, 2v, so a
value outside the range (a 20-cycle divide) still moves; each within its field's floor and ceiling (the table's
bounds), nearest to v first.
Every candidate of a parameter is tried and the best kept only when it lowers the training MAPE, so the MAPE
never rises. A row change re-simulates only the blocks holding that key (what makes a pass affordable), a
global change every block. Passes repeat until one improves nothing, the MAPE is 0, or the next candidate
would overrun the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.surrogates.difftune.calibration import CEILING, FLOOR, GLOBALS, GRID, Parameter, blocks_by_key, value, with_values
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.search_result import SearchResult, ape, check_budget, check_problem, curve
from engine.surrogates.difftune.simulate import simulate

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
    return [*(Parameter(g) for g in GLOBALS),
            *(p for k in ordered for p in (Parameter("latency", k), Parameter("uops", k),
                                           *(Parameter("port", k, r) for r, _ in start.rows[k].port_cycles)))]


class _Greedy:
    """The search's state: the table, its per-block errors and the calls spent, with the best-so-far curve."""

    def __init__(self, blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, budget: int) -> None:
        self.blocks, self.truth, self.budget = blocks, truth, budget
        self.holders = blocks_by_key(blocks)
        self.every = np.arange(len(blocks))
        self.table = start
        self.errors = ape(simulate(blocks, start), truth)
        self.calls = len(blocks)
        self.spent, self.best = [self.calls], [float(self.errors.mean())]
        self.done = False  # budget spent, or the MAPE is 0 and nothing is left to gain

    def improve(self, p: Parameter) -> bool:
        """Try ``p``'s candidates (while the budget lasts); keep the best if it lowers the MAPE."""
        affected = self.holders[p.key] if p.key else self.every
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
        return found is not None


def greedy_search(blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, budget: int, *,
                  seed: int = 0, on_progress: Callable[[int, float], None] | None = None) -> SearchResult:
    """Coordinate search from ``start`` for a table whose simulation of ``blocks`` matches ``truth`` (cycles per
    100 iterations); ``budget`` counts simulator calls (one block under one table), the start's first evaluation
    included. ``on_progress(calls, best MAPE)`` after each parameter is tried."""
    values = check_problem(blocks, truth, start)
    search = _Greedy(blocks, values, start, check_budget(budget, len(blocks)))
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
