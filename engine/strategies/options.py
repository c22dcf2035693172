"""Strategy options as tables: one :class:`Option` per option, the only place its name, default,
meaning and accepted values are written.

Each strategy class declares ``OPTIONS: tuple[Option, ...]`` (in the spirit of Kernel Tuner's
per-strategy option tables). Everything else is derived from it, so a new option needs one line:

* :func:`resolve`: unknown names refused, every value checked, defaults filled (the strategy
  constructor calls it, so construction is validation, as in scikit-learn);
* by strategy name (:mod:`engine.strategies.registry`): ``validate``, ``help_text`` (the table for
  ``tunelab tune --help``), ``form_fields`` and ``from_form`` (what a page turns into widgets, and
  back into options).

A refusal is one line naming the strategy, the option and the value, e.g.
``DLMT option 'threshold' 2.0: must be a float between 0 and 1 (exclusive)``. Checks that need the
space or the budget (a factor name, a design no larger than the budget) stay in the constructors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal

from engine.errors import UserError, brief

Kind = Literal["int", "float", "bool", "choice", "text", "list"]
#: An extra rule on a value of the right kind: the complaint ("must be ...") or None when it is fine.
Rule = Callable[[Any], str | None]


def _fits(value: Any, kind: Kind, choices: tuple[Any, ...]) -> bool:
    """Whether ``value`` has the JSON shape ``kind`` asks for (a bool is never a number or a choice)."""
    if isinstance(value, bool):
        return kind == "bool"
    if kind == "int":
        return isinstance(value, Integral)
    if kind == "float":
        return isinstance(value, Real)
    if kind == "choice":
        return any(value == c and isinstance(value, type(c)) for c in choices)
    if kind == "text":
        return isinstance(value, str)
    return kind == "list" and isinstance(value, (list, tuple))


def _number(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Option:
    """One strategy option: its ``kind`` (the JSON shape and the widget a form uses), the values it
    takes (``choices``; ``low``/``high`` for numbers, ``exclusive`` for open bounds), whether None
    means "decide from the budget or space" (``optional``), a second shape it also takes (``also``:
    DLMT's ``size`` is a rule name or a number) and an extra ``rule``."""

    name: str
    default: Any
    description: str
    kind: Kind
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    exclusive: bool = False
    optional: bool = False
    also: Kind | None = None
    rule: Rule | None = None

    @property
    def kinds(self) -> tuple[Kind, ...]:
        return (self.kind,) if self.also is None else (self.kind, self.also)

    @property
    def accepts(self) -> str:
        """The accepted values in words, e.g. ``one of 2k, orio or a float > 0``."""
        words = {"int": "an int", "float": "a float", "bool": "a bool (true or false)", "text": "a text",
                 "list": "a list", "choice": "one of " + ", ".join(map(str, self.choices))}
        text = " or ".join(words[k] + (self._bounds if k in ("int", "float") else "") for k in self.kinds)
        return text + (" or null" if self.optional else "")

    @property
    def _bounds(self) -> str:
        low, high = self.low, self.high
        if low is not None and high is not None:
            return f" between {_number(low)} and {_number(high)}" + (" (exclusive)" if self.exclusive else "")
        if low is not None:
            return f" {'>' if self.exclusive else '>='} {_number(low)}"
        if high is not None:
            return f" {'<' if self.exclusive else '<='} {_number(high)}"
        return ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` ("must be ..."), or None when the option takes it."""
        if value is None and self.optional:
            return None
        kind = next((k for k in self.kinds if _fits(value, k, self.choices)), None)
        if kind is None:
            return f"must be {self.accepts}"
        if kind in ("int", "float") and not self._within(value):
            return f"must be {self.accepts}"
        return self.rule(value) if self.rule is not None else None

    def _within(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.exclusive:
            return (self.low is None or value > self.low) and (self.high is None or value < self.high)
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def check(self, strategy: str, value: Any) -> None:
        """Refuse ``value`` in one line naming the strategy, the option and the value."""
        problem = self.problem(value)
        if problem is not None:
            raise UserError(f"{strategy} option {self.name!r} {shown(value)}: {problem}")


def json_text(value: Any) -> str | None:
    """``value`` as JSON text, or None when it has no JSON form."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):  # not JSON, or an int past Python's int-to-text limit
        return None


def shown(value: Any, width: int = 80) -> str:
    """``value`` as JSON (as it was typed in ``--options``), cut to ``width`` characters."""
    text = json_text(value)
    if text is None:
        return brief(value, width)
    return text if len(text) <= width else f"{text[: width - 1]}…"


def texts(value: Sequence[object]) -> str | None:
    """Rule: every item is a text (factor names, constraint expressions, formula terms)."""
    return None if all(isinstance(v, str) for v in value) else "must be a list of texts"


def resolve(strategy: str, table: Sequence[Option], options: Any) -> dict[str, Any]:
    """Every option of ``table``: the given values, each checked, and the defaults for the rest."""
    if not isinstance(options, Mapping):
        raise UserError(f"{strategy} options {shown(options)}: expected a mapping of option names to values")
    known = {o.name: o for o in table}
    for name, value in options.items():
        if name not in known:
            raise UserError(f"{strategy} option {brief(name)} {shown(value)}: not an option of {strategy} "
                            f"(options: {', '.join(known) or 'none'})")
        known[name].check(strategy, value)
    return {o.name: options.get(o.name, o.default) for o in table}
