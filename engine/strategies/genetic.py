"""GA: a genetic algorithm; with ``selection`` roulette, the one of BOAST's benchmark (darwinning gem), docs/dlmt.md §4.3.

One gene per factor (its level index). Population ``population``, ``generations`` (None = until the
budget is spent), mutation rate ``mutation`` (defaults in :attr:`Genetic.OPTIONS`), elitism 1. Each generation
keeps the best member and fills the population with children of two distinct parents; a child is a uniform
crossover, and with probability ``mutation`` one random gene is redrawn.

* **Selection.** ``tournament`` (default): each parent is the best of ``tournament`` members drawn at random, so
  the pressure depends on the ranks alone. ``roulette`` (the paper's): weights ∝ 1/fitness (for an objective that
  is not a positive quantity to minimise, 1/(loss − min loss + spread)); on Kernel Tuner spaces it over-concentrates
  where the spread of run times is large and gives no pressure where it is small (issue 19).
* **Fresh children.** A child already measured (or already in this generation) is replaced by the closest valid
  configuration not measured yet (:meth:`Domain.nearest`): every slot of a generation is a new measurement
  (about 60% of children re-visited measured configurations on Kernel Tuner spaces before).

Deviation: how the original scored runtime-invalid genomes is not public. Here genomes are drawn,
crossed and mutated until they are known-valid (constraints, or membership of an exhaustive table;
up to ``tries`` attempts, then a random valid configuration), so every evaluation is a real one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.space.factors import Space
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option

SELECTIONS = ("tournament", "roulette")


class Genetic(Strategy):
    name = "GA"
    summary = "genetic algorithm: tournament (or roulette) selection, uniform crossover, mutation, elitism 1"
    OPTIONS = (
        Option("population", 20, "members of each generation", "int", low=2),
        Option("generations", None, "generations after the first (null: until the budget is spent)", "int", low=0,
               optional=True),
        Option("mutation", 0.1, "probability that a child has one gene redrawn", "float", low=0, high=1),
        Option("tries", 50, "draws of a known-valid genome before a random valid configuration stands in", "int",
               low=0),
        Option("selection", "tournament", "how parents are chosen: tournament (by rank) or roulette (∝ 1/fitness, "
               "the paper's)", "choice", choices=SELECTIONS),
        Option("tournament", 3, "members drawn for each tournament; the best is a parent", "int", low=2),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        self.population, self.generations = int(self.options["population"]), self.options["generations"]
        self.mutation, self.tries = float(self.options["mutation"]), int(self.options["tries"])
        self.selection, self.tournament = str(self.options["selection"]), int(self.options["tournament"])

    def _random_genome(self) -> np.ndarray:
        for _ in range(self.tries):
            genome: np.ndarray = self.rng.integers(0, self.domain.n_levels)
            if self.domain.valid(genome)[0]:
                return genome
        genome = self.domain.random_valid(1, self.rng)[0]
        return genome

    def _parents(self, loss: np.ndarray, weights: np.ndarray | None) -> tuple[int, int]:
        """Two distinct members: by roulette ``weights``, else by tournaments on ``loss`` (sorted, so a lower index
        is a better member)."""
        if weights is not None:
            a, b = self.rng.choice(len(loss), size=2, replace=False, p=weights)
            return int(a), int(b)
        size = min(self.tournament, len(loss))
        first = int(self.rng.choice(len(loss), size=size, replace=False).min())
        others = np.delete(np.arange(len(loss)), first)
        second = int(self.rng.choice(others, size=min(size, len(others)), replace=False).min())
        return first, second

    def _child(self, parents: np.ndarray, loss: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        for _ in range(self.tries):
            a, b = self._parents(loss, weights)
            pick = self.rng.random(len(self.domain.names)) < 0.5
            child: np.ndarray = np.where(pick, parents[a], parents[b])
            if self.rng.random() < self.mutation:
                j = self.rng.integers(len(child))
                child[j] = self.rng.integers(self.domain.n_levels[j])
            if self.domain.valid(child)[0]:
                return child
        return self._random_genome()

    def _roulette(self, loss: np.ndarray) -> np.ndarray:
        finite = np.isfinite(loss)
        if finite.any() and loss[finite].min() > 0:
            fitness = np.where(finite, 1.0 / np.where(finite, loss, 1.0), 0.0)
        elif finite.any():
            spread = max(float(np.ptp(loss[finite])), 1e-300)
            fitness = np.where(finite, 1.0 / (np.where(finite, loss, 0.0) - loss[finite].min() + spread), 0.0)
        else:
            fitness = np.ones(len(loss))
        weights: np.ndarray = fitness / fitness.sum() if np.count_nonzero(fitness) >= 2 else np.full(len(loss), 1.0 / len(loss))
        return weights

    def _search(self) -> Search:
        members = self.domain.random_valid(self.population, self.rng)  # distinct: no slot of the first generation wasted
        result = yield members
        loss = result.loss
        generation = 0
        while self.generations is None or generation < self.generations:
            generation += 1
            self.step = generation
            order = np.argsort(loss, kind="stable")
            members, loss = members[order], loss[order]
            weights = self._roulette(loss) if self.selection == "roulette" else None
            taken = {int(c) for c in self.measured(ok_only=False)[0]}
            children = [members[0]]
            while len(children) < self.population:
                child = self._child(members, loss, weights)
                code = int(self.domain.encode(child[None, :])[0])
                if code in taken:
                    fresh = self.domain.nearest(child, np.fromiter(taken, np.int64, len(taken)), self.rng)
                    if fresh is None:
                        break  # every valid configuration is measured
                    child, code = fresh, int(self.domain.encode(fresh[None, :])[0])
                taken.add(code)
                children.append(child)
            if len(children) == 1:
                return
            members = np.array(children)
            result = yield members
            loss = result.loss
            if self.used >= self.budget:
                return
