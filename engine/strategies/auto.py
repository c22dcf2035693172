"""AUTO: the strategy to use when a person does not choose one (issue 19): DLMT's designs and fixes while its
model has something to say, then a search that needs no model for the budget left.

DLMT finds the factors that matter and their levels with few measurements (first of 18 methods at budget 40 on
Kernel Tuner spaces), but a linear model has nothing more to say once its terms are used up. Here DLMT runs its
steps (a step that fixes nothing grows its design; a fix that measurements contradict is released) and, when its
model is empty or its steps are over, ``then`` takes the rest of the budget:

* ``local`` (default): DLMT's local search, first-improvement one-level moves around the best measurements, free of
  DLMT's fixes;
* ``bo``: BO's expected improvement (:func:`~engine.strategies.bayes.ei_steps`), a GP fitted to everything measured
  over every valid configuration;
* ``tpe``: Optuna's TPE (:func:`~engine.strategies.optuna_tpe.tpe_steps`), told every measurement first.

Measured on the five Kernel Tuner caches (10 runs, geometric mean of the mean best ÷ optimum): at budget 40 both
1.135 (BO alone 1.148); at budget 100, local 1.031 and bo 1.049 (BO alone 1.110), and bo costs 5× the CPU. At
budget 200 (30 runs, mean best ÷ optimum) tpe is no better overall: gemm 1.020 against local's 1.001, convolution
A4000 1.009 against 1.001, convolution A6000 1.050 against 1.076. With ``then`` local, AUTO's runs are DLMT's
(same seed, same measurements): AUTO is the name of the default, DLMT the method a person steers. The ranking
against every peer is ``bench/peers.py``'s.
"""

from __future__ import annotations

from typing import Any, ClassVar

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies import optuna_tpe
from engine.strategies.base import Search
from engine.strategies.bayes import EISettings, ei_steps
from engine.strategies.dlmt import DLMT
from engine.strategies.domain import Domain
from engine.strategies.options import Option
from engine.strategies.optuna_tpe import TPESettings, tpe_steps

HANDOFFS = ("bo", "local", "tpe")
#: Candidates BO scores when the space has no candidate list.
POOL = 5000
#: DLMT options AUTO does not offer: it always spends its budget, and its hand-off takes the place of ``refine``.
_PINNED: dict[str, Any] = {"spend": True, "refine": 0}


class Auto(DLMT):
    name = "AUTO"
    summary = "DLMT's designs and fixes, then a local search (or BO) with the budget left: the default choice"
    PINNED: ClassVar[dict[str, Any]] = _PINNED
    OPTIONS = (*[o for o in DLMT.OPTIONS if o.name not in _PINNED],
               Option("then", "local", "what takes the budget DLMT's model leaves: local (DLMT's local search), bo "
                      "(a GP over the whole space) or tpe (Optuna's TPE, told every measurement)", "choice", choices=HANDOFFS))

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        if self.options["then"] == "tpe" and not optuna_tpe.available():
            raise UserError("AUTO option 'then' tpe: needs the optional package optuna (pip install optuna)")

    def _search(self) -> Search:
        yield from self._steps()
        if self.best_code is None or self.used >= self.budget:
            return
        self.step += 1
        if self.options["then"] == "local":
            yield from self._local()
        elif self.options["then"] == "tpe":
            yield from tpe_steps(self, TPESettings())
        else:
            yield from ei_steps(self, self.domain.pool(POOL, self.rng), EISettings())
