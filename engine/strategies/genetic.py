"""GA: the genetic algorithm of BOAST's benchmark (darwinning gem), docs/dlmt.md §4.3.

One gene per factor (its level index). Population ``population``, ``generations`` (None = until the
budget is spent), mutation rate ``mutation`` (defaults in :attr:`Genetic.OPTIONS`), elitism 1, twins
removed. Each generation keeps the best member and fills the population with children of two
distinct parents chosen by roulette selection with weights ∝ 1/fitness (for an objective that is not a positive
quantity to minimise, 1/(loss − min loss + spread)); a child is a uniform crossover, and
with probability ``mutation`` one random gene is redrawn. Members are measured once (the ledger
answers re-measurements for free), so a run costs about population + generations × (population − 1).

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

#: Generations in a row that measure nothing new before the search gives up (all known already).
STALE_GENERATIONS = 25


class Genetic(Strategy):
    name = "GA"
    summary = "genetic algorithm: roulette selection, uniform crossover, mutation, elitism 1"
    OPTIONS = (
        Option("population", 20, "members of each generation", "int", low=2),
        Option("generations", 5, "generations after the first (null: until the budget is spent)", "int", low=0,
               optional=True),
        Option("mutation", 0.1, "probability that a child has one gene redrawn", "float", low=0, high=1),
        Option("tries", 50, "draws of a known-valid genome before a random valid configuration stands in", "int",
               low=0),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        self.population, self.generations = int(self.options["population"]), self.options["generations"]
        self.mutation, self.tries = float(self.options["mutation"]), int(self.options["tries"])

    def _random_genome(self) -> np.ndarray:
        for _ in range(self.tries):
            genome: np.ndarray = self.rng.integers(0, self.domain.n_levels)
            if self.domain.valid(genome)[0]:
                return genome
        genome = self.domain.random_valid(1, self.rng)[0]
        return genome

    def _child(self, parents: np.ndarray, weights: np.ndarray) -> np.ndarray:
        for _ in range(self.tries):
            a, b = self.rng.choice(len(parents), size=2, replace=False, p=weights)
            pick = self.rng.random(len(self.domain.names)) < 0.5
            child: np.ndarray = np.where(pick, parents[a], parents[b])
            if self.rng.random() < self.mutation:
                j = self.rng.integers(len(child))
                child[j] = self.rng.integers(self.domain.n_levels[j])
            if self.domain.valid(child)[0]:
                return child
        return self._random_genome()

    def _search(self) -> Search:
        members = np.array([self._random_genome() for _ in range(self.population)])
        result = yield members
        loss = result.loss
        generation, stale = 0, 0
        while self.generations is None or generation < self.generations:
            generation += 1
            self.step = generation
            order = np.argsort(loss, kind="stable")
            members, loss = members[order], loss[order]
            finite = np.isfinite(loss)
            if finite.any() and loss[finite].min() > 0:
                fitness = np.where(finite, 1.0 / np.where(finite, loss, 1.0), 0.0)
            elif finite.any():
                spread = max(float(np.ptp(loss[finite])), 1e-300)
                fitness = np.where(finite, 1.0 / (np.where(finite, loss, 0.0) - loss[finite].min() + spread), 0.0)
            else:
                fitness = np.ones(len(loss))
            weights = fitness / fitness.sum() if np.count_nonzero(fitness) >= 2 else np.full(len(loss), 1.0 / len(loss))
            seen = {self.domain.encode(members[0][None, :])[0]}
            children = [members[0]]
            attempts = 0
            while len(children) < self.population and attempts < 20 * self.population:
                attempts += 1
                child = self._child(members, weights)
                code = self.domain.encode(child[None, :])[0]
                if code not in seen:
                    seen.add(code)
                    children.append(child)
            members = np.array(children)
            before = self.used
            result = yield members
            loss = result.loss
            stale = 0 if self.used > before else stale + 1
            if self.used >= self.budget or stale >= STALE_GENERATIONS:
                return
