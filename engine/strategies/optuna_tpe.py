"""TPE: Optuna's Tree-structured Parzen Estimator over the same space (optional dependency).

How the levels reach Optuna matters more than any TPE setting (issue 19: handing level indices over as
integers imposed a false order and took one Kernel Tuner space from 1.12 to 2.41 mean slowdown):

* ``encoding`` ``categorical`` (default): every factor is a choice among its levels, as an Optuna user tuning a
  Kernel Tuner space writes it; TPE then learns each level's worth on its own;
* ``ordered``: numeric factors become numbers on their own scale (the log for geometric levels such as powers of
  two, the value for evenly spaced ones) and a suggestion is snapped to the nearest level; booleans and
  categorical factors stay choices.

A suggestion outside the constraints, or one that failed, is told as ``PRUNED``: TPE counts it among the bad
trials and learns to avoid the region (a ``FAIL`` would be ignored and proposed again). One already measured is
told its known value. Either way the closest valid configuration not measured yet (:meth:`Domain.nearest`) is
TPE's next trial (enqueued), so every measurement costs at most two suggestions (TPE concentrates on its best
region and re-proposes it hundreds of times otherwise), and a run ends when the budget is spent or every valid
configuration is measured, never early.

Needs ``pip install optuna`` (installed with Tunelab); without it, creating the strategy raises a one-line error
and the registry lists TPE as unavailable.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import UserError
from engine.space.factors import Factor, Space
from engine.strategies.base import PENDING, Pick, Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option

ENCODINGS = ("categorical", "ordered")


def available() -> bool:
    try:
        import optuna  # noqa: F401
    except ImportError:
        return False
    return True


def level_scale(factor: Factor) -> np.ndarray | None:
    """Where an ordered numeric factor's levels lie on the scale TPE should see (their log when geometric, as for
    powers of two; their values when evenly spaced; whichever spacing is more even), or None for a factor that
    is a choice (categorical, boolean, a single level)."""
    if factor.kind not in ("integer", "ordinal") or factor.n_levels < 2:
        return None
    values = np.asarray(factor.levels, dtype=float)
    if not np.all(np.diff(values) > 0):
        return None
    if values[0] > 0:
        logs: np.ndarray = np.log(values)
        if _unevenness(logs) < _unevenness(values):
            return logs
    return values


def _unevenness(points: np.ndarray) -> float:
    """Spread of the gaps between sorted points relative to their mean (0: evenly spaced)."""
    gaps = np.diff(points)
    return float(gaps.std() / gaps.mean())


@dataclass(frozen=True)
class TPESettings:
    """What TPE's loop needs (TPE's options of the same names)."""

    startup: int = 10
    encoding: str = "categorical"
    multivariate: bool = True


class _Levels:
    """A space's factors as Optuna sees them under an encoding: distributions, and suggestions ↔ level rows."""

    def __init__(self, space: Space, encoding: str) -> None:
        self.factors = space.factors
        self.scales = [level_scale(f) if encoding == "ordered" else None for f in self.factors]

    def distributions(self) -> dict[str, Any]:
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        return {f.name: (CategoricalDistribution(list(range(f.n_levels))) if scale is None
                         else FloatDistribution(float(scale[0]), float(scale[-1])))
                for f, scale in zip(self.factors, self.scales)}

    def row(self, params: dict[str, Any]) -> list[int]:
        """Level indices of a suggestion (a number snapped to its nearest level)."""
        return [int(params[f.name]) if scale is None else int(np.argmin(np.abs(scale - params[f.name])))
                for f, scale in zip(self.factors, self.scales)]

    def params(self, row: np.ndarray) -> dict[str, Any]:
        """The suggestion that stands for a configuration (its levels' own points)."""
        return {f.name: int(i) if scale is None else float(scale[i]) for f, scale, i in zip(self.factors, self.scales, row)}


def told_study(strategy: Strategy, settings: TPESettings, levels: _Levels) -> Any:
    """An Optuna study with a TPE sampler, told everything ``strategy`` has measured: successes as complete
    trials, failures as pruned ones (what a strategy that hands its budget over to TPE has learnt)."""
    import optuna
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # multivariate: stable in practice
        sampler = optuna.samplers.TPESampler(seed=strategy.seed, n_startup_trials=settings.startup,
                                             multivariate=settings.multivariate, constant_liar=strategy.parallel > 1)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    dists = levels.distributions()
    good = set(strategy.measured()[0].tolist())
    codes, loss = strategy.measured(ok_only=False)
    for code, value, row in zip(codes.tolist(), loss, strategy.domain.decode(codes)):
        ok = code in good
        study.add_trial(create_trial(params=levels.params(row), distributions=dists, value=float(value) if ok else None,
                                     state=TrialState.COMPLETE if ok else TrialState.PRUNED))
    return study


def tpe_steps(strategy: Strategy, settings: TPESettings) -> Search:
    """TPE's loop until ``strategy``'s budget is spent, from what it has measured already: TPE's own search, and
    the search of a strategy that hands its budget over to TPE. A pick still measuring stays a running trial,
    which Optuna's ``constant_liar`` keeps the next suggestions away from, and is told once its result is in."""
    levels = _Levels(strategy.domain.space, settings.encoding)
    study = told_study(strategy, settings, levels)
    dists = levels.distributions()
    running: dict[int, Any] = {}
    while strategy.used < strategy.budget:
        for code in [c for c in running if strategy.result_of(c) is not None]:
            loss, status = strategy.result_of(code)  # type: ignore[misc]  # not None: filtered just above
            _tell(study, running.pop(code), loss, status)
        trial = study.ask(dists)
        row = levels.row(trial.params)
        code = int(strategy.domain.encode(np.array([row]))[0])
        known = strategy.is_known(code)
        result = yield Pick(np.array(row))
        if result.status[0] == PENDING:
            running[code] = trial
        else:
            _tell(study, trial, float(result.loss[0]), str(result.status[0]))
        if known or result.status[0] in strategy.free_statuses:  # nothing new: the closest valid one not measured yet
            tried, _ = strategy.measured(ok_only=False)
            instead = strategy.domain.nearest(np.array(row), tried, strategy.rng)
            if instead is None:
                return  # every valid configuration is measured
            study.enqueue_trial(levels.params(instead))


def _tell(study: Any, trial: Any, loss: float, status: str) -> None:
    """A measured pick as a trial: its loss when it ran, pruned when it failed or was not valid."""
    from optuna.trial import TrialState

    if status == "ok":
        study.tell(trial, loss)
    else:
        study.tell(trial, state=TrialState.PRUNED)


class OptunaTPE(Strategy):
    name = "TPE"
    summary = "Optuna's TPE sampler, levels as choices (or on their own scale); infeasible and failed points pruned"
    OPTIONS = (
        Option("startup", 10, "random start-up trials before TPE models the results", "int", low=0),
        Option("encoding", "categorical", "how levels reach TPE: categorical (each factor a choice) or ordered "
               "(numeric factors on their own scale, log for geometric levels)", "choice", choices=ENCODINGS),
        Option("multivariate", True, "model the factors jointly (Optuna's multivariate TPE) rather than one by one", "bool"),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        if not available():
            raise UserError("strategy TPE needs the optional package optuna (pip install optuna)")
        super().__init__(domain, budget, seed, direction, **options)
        o = self.options
        self.settings = TPESettings(int(o["startup"]), o["encoding"], bool(o["multivariate"]))

    def _search(self) -> Search:
        yield from tpe_steps(self, self.settings)
