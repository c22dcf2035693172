"""Strategy names → classes, with their options read from the constructors (for CLI, pages, docs)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies.base import Strategy
from engine.strategies.bayes import BayesianOptimization
from engine.strategies.dlmt import DLMT
from engine.strategies.domain import Domain
from engine.strategies.dopt import DOptimal
from engine.strategies.genetic import Genetic
from engine.strategies.greedy import GreedyRestarts, GreedySearch
from engine.strategies.lhs import LatinHypercube
from engine.strategies.linear_model import LinearModelSearch
from engine.strategies.optuna_tpe import OptunaTPE
from engine.strategies.optuna_tpe import available as optuna_available
from engine.strategies.random_search import RandomSearch

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (RandomSearch, LatinHypercube, GreedySearch, GreedyRestarts, Genetic, LinearModelSearch,
                DOptimal, DLMT, BayesianOptimization, OptunaTPE)
}
_BASE_ARGS = {"self", "domain", "budget", "seed", "direction"}


def strategy_class(name: str) -> type[Strategy]:
    key = str(name).strip().upper()
    if key not in STRATEGIES:
        raise UserError(f"strategy {name!r} is not one of {', '.join(STRATEGIES)}")
    return STRATEGIES[key]


def options_of(name: str) -> dict[str, Any]:
    """The strategy's options and their defaults."""
    signature = inspect.signature(strategy_class(name).__init__)
    return {p.name: p.default for p in signature.parameters.values() if p.name not in _BASE_ARGS}


def available(name: str) -> bool:
    return strategy_class(name) is not OptunaTPE or optuna_available()


def describe() -> list[dict]:
    """One row per strategy: name, summary, options with defaults, whether it can run here."""
    return [{"name": n, "summary": c.summary, "options": options_of(n), "available": available(n)} for n, c in STRATEGIES.items()]


def make_strategy(name: str, domain: Domain | Space, budget: int, seed: int | None = None,
                  direction: str = "minimize", options: Mapping[str, Any] | None = None) -> Strategy:
    """A strategy by name; an unknown option is a one-line error naming it."""
    cls = strategy_class(name)
    options = dict(options or {})
    known = options_of(cls.name)
    for key in options:
        if key not in known:
            raise UserError(f"strategy {cls.name}: unknown option {key!r} (options: {', '.join(known) or 'none'})")
    return cls(domain, budget, seed, direction, **options)


def parse_names(text: str) -> list[str]:
    """``"RS,lhs, DLMT"`` -> ["RS", "LHS", "DLMT"] (each checked, duplicates refused)."""
    names = [strategy_class(part).name for part in str(text).split(",") if part.strip()]
    if not names:
        raise UserError("--strategies: name at least one strategy")
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate:
        raise UserError(f"--strategies: {duplicate} is listed twice")
    return names
