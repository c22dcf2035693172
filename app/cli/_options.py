"""``--options JSON`` for strategies: parsed, and every value checked against the option's type.

A value of the wrong type used to travel into the strategy and fail there with a traceback (a
string where a number belongs); here it is one line naming the option and the value. The types
are the strategy constructor's annotations, so a new option is checked without a line here.
"""

from __future__ import annotations

import collections.abc
import json
import math
import types
import typing
from typing import Any

from engine.errors import UserError


def _no_constant(name: str) -> None:
    raise UserError(f"--options: {name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UserError(f"--options: {text} is too large for a number")
    return value


def parse_json(text: str | None) -> Any:
    """The JSON document ``text`` (None or empty: an empty object); NaN, Infinity and numbers too
    large for a float (``1e999``) refused."""
    if not text:
        return {}
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise UserError(f"--options: not valid JSON ({exc.msg} at column {exc.colno})") from None


def fits(value: Any, hint: Any) -> bool:
    """Whether a JSON ``value`` is acceptable for the annotation ``hint`` (unknown hints accept)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is typing.Literal:
        return value in args
    if origin is tuple:
        return (isinstance(value, list) and len(value) == len(args)
                and all(fits(v, a) for v, a in zip(value, args)))
    if origin in (list, collections.abc.Sequence):
        return isinstance(value, list) and all(fits(v, args[0]) for v in value) if args else isinstance(value, list)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    if isinstance(hint, type) and origin is None:
        return isinstance(value, hint)
    return True


def _describe(hint: Any) -> str:
    text = str(hint).replace("collections.abc.", "").replace("typing.", "")
    return text.replace("<class '", "").replace("'>", "")


def check_strategy_options(strategy: str, options: Any) -> dict:
    """``options`` (a parsed JSON object) checked against ``strategy``'s constructor, one line per refusal."""
    from engine.strategies.registry import options_of, strategy_class

    cls = strategy_class(strategy)
    if not isinstance(options, dict):
        raise UserError(f'--options {json.dumps(options)[:80]}: expected a JSON object such as {{"threshold": 0.01}}')
    known = options_of(cls.name)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except (NameError, TypeError):  # an annotation this Python cannot evaluate: check names only
        hints = {}
    for name, value in options.items():
        if name not in known:
            raise UserError(f"--options {name}: not an option of {cls.name} (options: {', '.join(known) or 'none'})")
        if name in hints and not fits(value, hints[name]):
            raise UserError(f"--options {name}={json.dumps(value)[:80]}: {cls.name} expects {_describe(hints[name])}")
    return options
