"""LM: iterative linear models on random samples with a fixed schedule (S. Q. Masnada's baseline,
docs/dlmt.md §4.3).

A schedule is a list of steps ``(samples, terms, fix)``: draw ``samples`` new random valid
configurations from the current subspace, fit ``y ~ terms`` (raw values, plain OLS) on every
measurement of the subspace, predict over the subspace and fix the factors ``fix`` at the argmin.
Then every remaining configuration of the final subspace is measured (as far as the budget goes) and
the answer is the fastest measured row *of that subspace* (``answer="subspace"``, the paper), or the
best measurement overall (``answer="best"``).

:data:`LAPLACIAN_SCHEDULE` is the paper's (50, 40, 20 and 5 samples; budget 119) and is the default
on a space that has its factors. Any other space gets a generic schedule (a deviation, the paper has
none): its factors in space order split into four groups, each with its linear and inverse terms
(:func:`engine.strategies.dlmt.initial_terms` without powers), samples in the paper's proportions
50:40:20:5 of ``0.95 × budget``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.model.columns import TermColumns, parse_term
from engine.space.factors import Space
from engine.strategies import fastlm
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option, texts

Step = tuple[int, Sequence[str], Sequence[str]]

LAPLACIAN_SCHEDULE: tuple[Step, ...] = (
    (50, ("vector_length", "lws_y"), ("vector_length", "lws_y")),
    (40, ("y_component_number",), ("y_component_number",)),
    (20, ("elements_number",), ("elements_number",)),
    (5, ("threads_number", "I(1/threads_number)"), ("threads_number",)),
)
ANSWERS = ("subspace", "best")
_PROPORTIONS = (50, 40, 20, 5)


def generic_schedule(space: Space, budget: int) -> list[Step]:
    """Four steps over the factors in space order (see the module docstring)."""
    from engine.strategies.dlmt import initial_terms

    terms = initial_terms(space, quadratic_levels=0, cubic_levels=0)
    names = [f.name for f in space.factors if f.n_levels > 1]
    groups = [g for g in np.array_split(np.array(names, dtype=object), min(4, len(names))) if len(g)]
    total = 0.95 * budget
    steps: list[Step] = []
    for group, share in zip(groups, _PROPORTIONS):
        group_terms = [t for t in terms if parse_term(t, space.names).factors <= set(group)]
        samples = max(len(group_terms) + 2, math.floor(total * share / sum(_PROPORTIONS[: len(groups)])))
        steps.append((samples, tuple(group_terms), tuple(group)))
    return steps


def _is_step(step: Any) -> bool:
    if not isinstance(step, (list, tuple)) or len(step) != 3:
        return False
    samples, terms, fix = step
    return (isinstance(samples, int) and not isinstance(samples, bool) and samples >= 1
            and all(isinstance(part, (list, tuple)) and texts(part) is None for part in (terms, fix)))


def schedule_steps(schedule: Sequence[object]) -> str | None:
    """Option rule: every step is ``[samples >= 1, [terms], [factors to fix]]``."""
    return None if all(_is_step(step) for step in schedule) else "must be a list of steps [samples >= 1, [terms], [factors]]"


def default_schedule(space: Space, budget: int) -> list[Step]:
    needed = {f for _, _, fix in LAPLACIAN_SCHEDULE for f in fix}
    if needed <= set(space.names):
        return list(LAPLACIAN_SCHEDULE)
    return generic_schedule(space, budget)


class LinearModelSearch(Strategy):
    name = "LM"
    summary = "linear models on random samples, fixing factors on a schedule"
    OPTIONS = (
        Option("schedule", None, "steps [samples, [terms], [factors to fix]] (null: the paper's on the Laplacian, "
               "else four groups of factors)", "list", optional=True, rule=schedule_steps),
        Option("answer", "subspace", "the answer: the final subspace's best (the paper) or the best measured",
               "choice", choices=ANSWERS),
        Option("pool", 2000, "candidates drawn when the space has no candidate list", "int", low=1),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        space = self.domain.space
        schedule = self.options["schedule"]
        self.schedule = list(schedule) if schedule is not None else default_schedule(space, self.budget)
        for _samples, _terms, fix in self.schedule:
            for name in fix:
                space.factor(name)
        self.parsed = [[parse_term(t, space.names) for t in terms] for _, terms, _ in self.schedule]
        self.answer_rule, self.pool_size = self.options["answer"], int(self.options["pool"])
        self.columns = TermColumns.shared(self.domain)
        self.fixed: dict[int, int] = {}
        self._pool: np.ndarray | None = None

    def _subspace(self) -> np.ndarray:
        if self._pool is None:
            self._pool = self.domain.pool(self.pool_size, self.rng)
        pool = self._pool
        mask = np.ones(len(pool), dtype=bool)
        for j, v in self.fixed.items():
            mask &= pool[:, j] == v
        return pool[mask]

    def _fresh(self, cand: np.ndarray, n: int) -> np.ndarray:
        measured, _ = self.measured(ok_only=False)
        fresh = cand[~np.isin(self.domain.encode(cand), measured)]
        n = min(n, len(fresh), self.remaining)
        return fresh[self.rng.choice(len(fresh), size=n, replace=False)] if n > 0 else fresh[:0]

    def _search(self) -> Search:
        names = self.domain.names
        for step, ((samples, _, fix), terms) in enumerate(zip(self.schedule, self.parsed), start=1):
            self.step = step
            cand = self._subspace()
            batch = self._fresh(cand, samples)
            if len(batch):
                yield batch
            if self.used >= self.budget:
                break
            codes, loss = self.measured()
            inside = np.isin(codes, self.domain.encode(cand))
            index, y = self.domain.decode(codes[inside]), self.sign * loss[inside]
            best = None
            if terms and len(y) > 1:
                X, slices = self.columns.matrix(terms, index=index)
                fitted = fastlm.fit(X, y, slices)
                if fitted is not None:
                    Xc, _ = self.columns.matrix(terms, index=cand)
                    best = cand[int(np.argmin(self.sign * fitted.predict(Xc)))]
            if best is None and len(y):
                best = index[int(np.argmin(self.sign * y))]
            if best is None:
                break
            for name in fix:
                self.fixed[names.index(name)] = int(best[names.index(name)])
        self.step += 1
        final = self._subspace()
        rest = self._fresh(final, len(final))
        if len(rest):
            yield rest
        if self.answer_rule == "subspace":
            codes, loss = self.measured()
            inside = np.isin(codes, self.domain.encode(final))
            if inside.any():
                self._answer_code = int(codes[inside][np.argmin(loss[inside])])
