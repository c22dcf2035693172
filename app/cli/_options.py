"""``--options JSON`` for strategies: parsed, and every value checked against the strategy's options table.

A value of the wrong type used to travel into the strategy and fail there with a traceback (a
string where a number belongs); here it is one line naming the strategy, the option and the value.
The checks are the tables of :mod:`engine.strategies.options`, so a new option is checked without a
line here.
"""

from __future__ import annotations

import json
import math
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


def check_strategy_options(strategy: str, options: Any) -> dict[str, Any]:
    """``options`` (a parsed JSON object) checked against ``strategy``'s options table, one line per
    refusal; returned as given, defaults not filled in (a tuning run's key hashes exactly these)."""
    from engine.strategies.registry import validate

    if not isinstance(options, dict):
        raise UserError(f'--options {json.dumps(options)[:80]}: expected a JSON object such as {{"threshold": 0.01}}')
    validate(strategy, options)
    return options
