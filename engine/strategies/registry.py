"""Strategy names → classes, with their options from each class's ``OPTIONS`` table (for CLI, pages, docs).

A plug-in adds a strategy with :func:`register_strategy` (the cost model's ``PF``, from its plug-in module, an entry
point of pyproject.toml), which lives in :mod:`engine.strategies.plugins` so that registering imports no strategy;
the plug-ins are loaded the first time a name is missing or the names are listed (:class:`engine.lazy.Registry`),
and their strategies follow the core's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.errors import UserError
from engine.lazy import Registry, imported, plugin_failures_note
from engine.space.factors import Space
from engine.strategies.auto import Auto
from engine.strategies.base import Strategy
from engine.strategies.bayes import BayesianOptimization
from engine.strategies.dlmt import DLMT
from engine.strategies.domain import Domain
from engine.strategies.dopt import DOptimal
from engine.strategies.genetic import Genetic
from engine.strategies.greedy import GreedyRestarts, GreedySearch
from engine.strategies.lhs import LatinHypercube
from engine.strategies.linear_model import LinearModelSearch
from engine.strategies.options import Option, json_text, resolve, shown
from engine.strategies.optuna_tpe import OptunaTPE
from engine.strategies.optuna_tpe import available as optuna_available
from engine.strategies.plugins import PLUGGED
from engine.strategies.plugins import register_strategy as register_strategy
from engine.strategies.random_search import RandomSearch

STRATEGIES: Registry[type[Strategy]] = Registry({
    cls.name: cls
    for cls in (RandomSearch, LatinHypercube, GreedySearch, GreedyRestarts, Genetic, LinearModelSearch,
                DOptimal, DLMT, BayesianOptimization, OptunaTPE, Auto)
}, PLUGGED, imported)


def strategy_class(name: str) -> type[Strategy]:
    key = str(name).strip().upper()
    if key not in STRATEGIES:
        raise UserError(f"strategy {name!r} is not one of {', '.join(STRATEGIES)}{plugin_failures_note()}")
    return STRATEGIES[key]


def options_of(name: str) -> dict[str, Any]:
    """The strategy's options and their defaults, in table order."""
    return {o.name: o.default for o in strategy_class(name).OPTIONS}


def available(name: str) -> bool:
    return strategy_class(name) is not OptunaTPE or optuna_available()


def describe() -> list[dict[str, Any]]:
    """One row per strategy: name, summary, options with defaults, whether it can run here."""
    return [{"name": n, "summary": c.summary, "options": options_of(n), "available": available(n)} for n, c in STRATEGIES.items()]


def make_strategy(name: str, domain: Domain | Space, budget: int, seed: int | None = None,
                  direction: str = "minimize", options: Mapping[str, Any] | None = None) -> Strategy:
    """A strategy by name, ``options`` checked against its table first (an unknown name or a refused
    value is a one-line error naming the strategy, the option and the value; a name such as
    ``budget`` must not reach the constructor as a keyword)."""
    cls = strategy_class(name)
    return cls(domain, budget, seed, direction, **resolve(cls.name, cls.OPTIONS, options or {}))


def parse_names(text: str) -> list[str]:
    """``"RS,lhs, DLMT"`` -> ["RS", "LHS", "DLMT"] (each checked, duplicates refused)."""
    names = [strategy_class(part).name for part in str(text).split(",") if part.strip()]
    if not names:
        raise UserError("--strategies: name at least one strategy")
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate:
        raise UserError(f"--strategies: {duplicate} is listed twice")
    return names


def table_of(strategy: str) -> tuple[str, tuple[Option, ...]]:
    """The strategy's canonical name and options table."""
    cls = strategy_class(strategy)
    return cls.name, cls.OPTIONS


def validate(strategy: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against the strategy's table, with defaults filled (see :func:`resolve`)."""
    return resolve(*table_of(strategy), options)


def help_text(strategy: str) -> str:
    """The strategy's options as a compact table: name, default, accepted values, meaning."""
    name, table = table_of(strategy)
    if not table:
        return f"{name}: no options"
    rows = [(o.name, shown(o.default), o.accepts, o.description) for o in table]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    return "\n".join([f"{name} options (name, default, accepted values, meaning):", *lines])


def _as_text(option: Option) -> bool:
    """Whether a form enters this option as text: a list, or a value of two shapes."""
    return option.kind == "list" or option.also is not None


def form_fields(strategy: str) -> list[dict[str, Any]]:
    """One widget description per option: ``name``, ``default`` (widget-ready: text fields hold
    their default as typed), ``description``, ``kind`` (int, float, bool, choice or text),
    ``optional`` (empty = the default's "decide for me"), ``low``/``high``/``exclusive``,
    ``choices`` and ``accepts`` (for help). Give the widgets' values to :func:`from_form`."""
    fields = []
    for o in table_of(strategy)[1]:
        text = _as_text(o)
        default = ("" if o.default is None else o.default if isinstance(o.default, str) else shown(o.default)) if text else o.default
        fields.append({"name": o.name, "default": default, "description": o.description,
                       "kind": "text" if text else o.kind, "optional": o.optional, "low": o.low, "high": o.high,
                       "exclusive": o.exclusive, "choices": list(o.choices), "accepts": o.accepts})
    return fields


def _parsed(text: str) -> Any:
    """A text field's value: empty = None, JSON when it parses (``["a"]``, ``2.5``), else the text."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (a tuple default and the list a form gives back are the same value)."""
    text = json_text(a)
    return text is not None and text == json_text(b)


def from_form(strategy: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The options a form's widget ``values`` (by option name) ask for: text fields parsed, values
    equal to the default left out (so an untouched form adds nothing to a run's stored options),
    every value checked."""
    name, table = table_of(strategy)
    known = {o.name: o for o in table}
    chosen = {}
    for key, value in values.items():
        option = known.get(key)
        if option is not None and _as_text(option) and isinstance(value, str):
            value = _parsed(value)
        if option is None or not _same(value, option.default):
            chosen[key] = value
    resolve(name, table, chosen)
    return chosen
