"""DOPT: one D-optimal design, one linear model, its predicted best (docs/dlmt.md §4.3).

A D-optimal design of ``runs`` configurations (Fedorov exchange over the valid candidates) for the
model ``formula`` (default: :func:`engine.strategies.dlmt.initial_terms` with linear and inverse
terms, the generic analogue of the paper's 11-term model), one OLS fit on raw values, and the
argmin of its prediction over the candidates. The predicted best is measured (and charged; the
paper looked it up for free) and is the answer (``answer="prediction"``, the paper), or the best
measurement is (``answer="best"``).

Options (:attr:`DOptimal.OPTIONS`): ``runs`` (None = budget − 1; the paper used 120), ``formula``,
``transform``, ``repeats`` (exchange random starts), ``answer``, ``pool`` (candidates drawn when the
space has no list).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from engine.errors import UserError
from engine.model.columns import TermColumns, parse_term
from engine.space.factors import Space
from engine.strategies import fastlm
from engine.strategies.base import Search, Strategy
from engine.strategies.design import doptimal_rows, estimable_terms
from engine.strategies.dlmt import FORMULA, REPEATS, TRANSFORM, initial_terms, parse_formula_terms
from engine.strategies.domain import Domain
from engine.strategies.options import Option

ANSWERS = ("prediction", "best")


class DOptimal(Strategy):
    name = "DOPT"
    summary = "one D-optimal design, one linear model, its predicted best"
    OPTIONS = (
        Option("runs", None, "runs of the design, at most the budget (null: budget − 1)", "int", low=2, optional=True),
        replace(FORMULA, description="the model, 'y ~ a + I(1/a) + ...' or a list of terms (null: linear and "
                "inverse terms of every factor)"),
        replace(TRANSFORM, default="none"),
        REPEATS,
        Option("answer", "prediction", "the answer: the model's predicted best (the paper) or the best measured",
               "choice", choices=ANSWERS),
        Option("pool", 3000, "candidates drawn when the space has no candidate list", "int", low=1),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        o = self.options
        space = self.domain.space
        formula = o["formula"]
        terms = initial_terms(space, quadratic_levels=0, cubic_levels=0) if formula is None else parse_formula_terms(formula)
        self.terms = [parse_term(t, space.names) for t in terms]
        self.runs = min(self.budget - 1 if o["runs"] is None else o["runs"], self.budget)
        if self.runs < 2:
            raise UserError(f"DOPT runs {self.runs!r} must be >= 2 (budget {self.budget})")
        self.transform, self.repeats = o["transform"], int(o["repeats"])
        self.answer_rule, self.pool_size = o["answer"], int(o["pool"])
        self.columns = TermColumns.shared(self.domain)

    def _search(self) -> Search:
        cand = self.domain.pool(self.pool_size, self.rng)
        X, slices = self.columns.matrix(self.terms, index=cand)
        self.terms = [self.terms[t] for t in estimable_terms(X, slices)]
        X, slices = self.columns.matrix(self.terms, index=cand)
        n = max(min(self.runs, len(cand)), X.shape[1] + 1)
        design = doptimal_rows(X, n, rng=self.rng, repeats=self.repeats)
        result = yield cand[design]
        ok = result.ok
        fitted = fastlm.fit(X[design][ok], self.sign * result.loss[ok], slices, self.transform) if ok.sum() > 2 else None
        if fitted is None:
            return
        best = cand[int(np.argmin(self.sign * fitted.predict(X)))]
        self.step = 1
        yield best[None, :]
        if self.answer_rule == "prediction":
            self._answer_code = int(self.domain.encode(best[None, :])[0])
