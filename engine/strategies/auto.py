"""AUTO: the strategy to use when a person does not choose one (issue 19): DLMT's designs and fixes while they find
better configurations, then a search that learns from everything measured for the budget left.

DLMT finds the factors that matter and their levels with few measurements (first of 18 methods at budget 40 on
Kernel Tuner spaces), but where the objective is not close to a low-order polynomial in the levels (gemm, whose
good configurations are a handful among 17,956) its later steps measure designs whose predictions are no better
than what was measured. So AUTO runs DLMT's steps until ``patience`` steps in a row (default 1) have a predicted
best no better than every measurement before it, or its model is used up, and ``then`` takes the rest of the budget:

* ``forest`` (default): picks of trees fitted to everything measured (:mod:`engine.strategies.forest`), every other
  measurement a move of DLMT's local search; the trees find the region (they split on unordered good levels and on
  interactions), the local moves finish it;
* ``local``: DLMT's local search alone, first-improvement one-level moves around the best measurements;
* ``bo``: BO's expected improvement (:func:`~engine.strategies.bayes.ei_steps`), a GP over every valid configuration;
* ``tpe``: Optuna's TPE (:func:`~engine.strategies.optuna_tpe.tpe_steps`), told every measurement first.

Measured with ``bench/peers.py`` (five Kernel Tuner caches, 30 runs per budget; geometric mean over the caches of
the mean best ÷ optimum at budgets 20/40/60/100/200): DLMT's full steps then the local search 1.205/1.114/1.084/
1.048/1.015; the forest after every step 1.205/1.113/1.064/1.024/1.002; the forest with ``patience`` 1, 1.209/1.094/
1.059/1.026/1.002. Median measurements to within 5% of the optimum at budget 200 went from 39/100/12/123/4 to
34/83/12/86/4 (convolution A4000, A6000, dedispersion, gemm, pnpoly). TPE told DLMT's designs does worse than TPE
from scratch on gemm (90 measurements to within 5% against 64, 20 runs): D-optimal designs sit at the extremes of
the levels, which misleads its densities. With ``then`` local and ``patience`` 0, AUTO's runs are DLMT's (same
seed, same measurements).

``prefix`` (DLMT's space-filling runs before the first design) stays 0: ``bench/peers.py --select`` chose no prefix
over 4 and 8 in four of five leave-one-space-out folds (10 runs, common seeds). Four runs found dedispersion's
many good configurations sooner (median measurements to within 5% at budget 200: 9 → 2) but cost the spaces where
the design's extremes inform the model (gemm 66 → 116, pnpoly 3 → 14).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import count
from typing import Any, ClassVar

import numpy as np

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies import forest, optuna_tpe
from engine.strategies.base import Pick, Search
from engine.strategies.bayes import EISettings, ei_steps
from engine.strategies.dlmt import DLMT
from engine.strategies.domain import Domain
from engine.strategies.forest import ForestPicker
from engine.strategies.options import Option
from engine.strategies.optuna_tpe import TPESettings, tpe_steps

HANDOFFS = ("forest", "local", "bo", "tpe")
#: Candidates BO and the forest score when the space has no candidate list.
POOL = 5000
#: DLMT options AUTO does not offer: it always spends its budget, and its hand-off takes the place of ``refine``.
_PINNED: dict[str, Any] = {"spend": True, "refine": 0}
#: DLMT options whose default AUTO sets otherwise: one step without a better prediction ends the steps.
_DEFAULTS: dict[str, Any] = {"patience": 1}


class Auto(DLMT):
    name = "AUTO"
    summary = "DLMT's designs and fixes while they find better configurations, then trees and a local search: the default"
    PINNED: ClassVar[dict[str, Any]] = _PINNED
    OPTIONS = (*[replace(o, default=_DEFAULTS[o.name]) if o.name in _DEFAULTS else o
                 for o in DLMT.OPTIONS if o.name not in _PINNED],
               Option("then", "forest", "what takes the budget DLMT's steps leave: forest (trees fitted to every "
                      "measurement, alternating with local moves), local (DLMT's local search), bo (a GP over the whole "
                      "space) or tpe (Optuna's TPE, told every measurement)", "choice", choices=HANDOFFS))

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        if self.options["then"] == "tpe" and not optuna_tpe.available():
            raise UserError("AUTO option 'then' tpe: needs the optional package optuna (pip install optuna)")

    def _search(self) -> Search:
        if self.options["then"] == "forest" and self.parallel > 1:
            forest.preload()  # while the designs measure, not between two rounds with every worker idle
        yield from self._steps()
        if self.best_code is None or self.used >= self.budget:
            return
        self.step += 1
        then = self.options["then"]
        if then == "forest":
            yield from self._forest()
        elif then == "local":
            yield from self._local()
        elif then == "tpe":
            yield from tpe_steps(self, TPESettings())
        else:
            yield from ei_steps(self, self.domain.pool(POOL, self.rng), EISettings())

    def _forest(self) -> Search:
        """The forest's picks, every other measurement a local move (either stands in when the other has none)."""
        picker = ForestPicker(self.domain, self.domain.pool(POOL, self.rng))
        moves: tuple[Callable[[], np.ndarray | None], ...] = (lambda: picker.pick(self), self._next_move)
        for turn in count():
            if self.used >= self.budget:
                return
            row = moves[turn % 2]()
            if row is None:
                row = moves[(turn + 1) % 2]()
            if row is None:
                return
            yield Pick(row)
