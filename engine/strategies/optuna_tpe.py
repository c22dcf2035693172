"""TPE: Optuna's Tree-structured Parzen Estimator over the same space (optional dependency).

Each factor is one Optuna parameter over its level indices (an integer distribution for ordered
factors, categorical otherwise), so TPE sees exactly the space the other strategies search. A
suggestion that turns out invalid or failed is told to Optuna as a failed trial; one already
measured is answered from the ledger for free. ``startup`` = TPE's random start-up trials;
``patience`` = consecutive suggestions that cost nothing (invalid or repeated) before giving up.

Needs ``pip install optuna`` (the ``test`` extra installs it); without it, creating the strategy
raises a one-line error and the registry lists TPE as unavailable.
"""

from __future__ import annotations

from typing import Any

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option


def available() -> bool:
    try:
        import optuna  # noqa: F401
    except ImportError:
        return False
    return True


class OptunaTPE(Strategy):
    name = "TPE"
    summary = "Optuna's TPE sampler over level indices (needs optuna)"
    OPTIONS = (
        Option("startup", 10, "random start-up trials before TPE models the results", "int", low=0),
        Option("patience", 500, "suggestions in a row that cost nothing (invalid or repeated) before giving up",
               "int", low=1),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        if not available():
            raise UserError("strategy TPE needs the optional package optuna (pip install optuna)")
        super().__init__(domain, budget, seed, direction, **options)
        self.startup, self.patience = int(self.options["startup"]), int(self.options["patience"])

    def _search(self) -> Search:
        import optuna
        from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
        from optuna.trial import TrialState

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.startup)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        space = self.domain.space
        dists: dict[str, BaseDistribution] = {
            f.name: (IntDistribution(0, f.n_levels - 1) if f.kind in ("ordinal", "integer")
                     else CategoricalDistribution(list(range(f.n_levels))))
            for f in space.factors
        }
        idle = 0
        while self.used < self.budget and idle < self.patience:
            trial = study.ask(dists)
            row = [trial.params[f.name] for f in space.factors]
            before = self.used
            result = yield self.measure(row)
            idle = 0 if self.used > before else idle + 1
            if result.ok[0]:
                study.tell(trial, float(result.loss[0]))
            else:
                study.tell(trial, state=TrialState.FAIL)
