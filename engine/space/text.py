"""Spaces as people type them: a factor table with level lists as text, constraints one per line.

Level text is a comma-separated list (``1, 2, 4, 8``), an integer range (``1..30`` or
``0..100 step 10``) or powers of two (``2^0..2^10``). Nothing typed here is evaluated as code.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, brief
from engine.space.factors import KINDS, Factor, Space, check_factor_name, level_range

if TYPE_CHECKING:
    import pandas as pd

#: Random draws :func:`valid_count` makes before calling a huge space empty (what Space.sample tries).
MAX_DRAWS = 2_000_000
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*(?:step\s+(\d+))?\s*$")
_MAX_DIGITS = 19  # int64 holds every 18-digit number; 19 digits may overflow and the level says so
_POW2 = re.compile(r"^\s*2\s*(?:\^|\*\*)\s*(\d+)\s*\.\.\s*2\s*(?:\^|\*\*)\s*(\d+)\s*$")


def parse_levels(text: str | None, kind: str, name: str) -> tuple[bool | int | str, ...]:
    """Levels from their text form (see the module docstring)."""
    text = "" if text is None else str(text).strip()
    if kind == "boolean" and not text:
        return (False, True)
    if not text:
        raise UserError(f"factor {brief(name)}: empty level list")
    if match := _POW2.match(text):
        low, high = (_exponent(group, name, text) for group in match.groups())
        if high < low or high > 62:
            raise UserError(f"factor {brief(name)}: bad power-of-two range {brief(text)}")
        return tuple(2**e for e in range(low, high + 1))
    if match := _RANGE.match(text):
        low, high, step = (_bound(group or "1", name, text) for group in match.groups())
        return tuple(level_range(name, low, high, step, written=brief(text)))
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _bound(digits: str, name: str, text: str) -> int:
    """An integer of a range, refused by name before ``int`` meets a 5,000-digit number."""
    if len(digits.lstrip("-")) > _MAX_DIGITS:
        raise UserError(f"factor {brief(name)}: range {brief(text)} has a bound outside the 64-bit integer range")
    return int(digits)


def _exponent(digits: str, name: str, text: str) -> int:
    if len(digits) > 2:
        raise UserError(f"factor {brief(name)}: bad power-of-two range {brief(text)}")
    return int(digits)


def format_levels(levels: Iterable[Any]) -> str:
    levels = list(levels)
    if len(levels) > 3 and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in levels):
        if all(b - a == 1 for a, b in zip(levels, levels[1:])):
            return f"{levels[0]}..{levels[-1]}"
        if levels[0] > 0 and all(b == 2 * a for a, b in zip(levels, levels[1:])) and levels[0] & (levels[0] - 1) == 0:
            return f"2^{levels[0].bit_length() - 1}..2^{levels[-1].bit_length() - 1}"
    return ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in levels)


def factor_table(space: Space) -> pd.DataFrame:
    """The editable table view of a space's factors."""
    import pandas as pd

    return pd.DataFrame(
        [{"name": f.name, "kind": f.kind, "levels": format_levels(f.levels)} for f in space.factors],
        columns=["name", "kind", "levels"],
    )


def space_from_table(rows: Iterable[Mapping[str, Any]], constraints: str | Iterable[str] = ()) -> Space:
    """Build a space from edited rows (name, kind, levels text) and constraints (text, one per line)."""
    factors = []
    for i, row in enumerate(rows, start=1):
        name = str(row.get("name") or "").strip()
        if not name:
            if not str(row.get("levels") or "").strip():
                continue  # an empty row left by the editor
            raise UserError(f"factor #{i}: missing name")
        check_factor_name(name)
        kind = str(row.get("kind") or "").strip()
        if kind not in KINDS:
            raise UserError(f"factor {brief(name)}: kind {brief(kind)} is not one of {', '.join(KINDS)}")
        factors.append(Factor(name, kind, parse_levels(row.get("levels"), kind, name)))
    if isinstance(constraints, str):
        constraints = constraints.splitlines()
    return Space(factors, [c for c in constraints if c.strip() and not c.strip().startswith("#")])


def valid_count(space: Space, sample: int = 20_000, seed: int = 0) -> tuple[int, bool]:
    """(number of valid configurations, exact?) — exact when enumerable, else estimated by sampling.

    Raises a :class:`UserError` naming the culprit when no valid configuration exists, or, for a huge
    space, none turns up in as many random draws as :meth:`Space.sample` would try (so a space refused
    here is one that sampling could not use either).
    """
    if not space.constraints:  # every configuration is valid: the count is the product of the level counts
        return space.size, True
    if space.enumerable:
        count = space.count_valid()
        if not count:
            raise UserError(space.explain_empty())
        return count, True
    import numpy as np

    rng = np.random.default_rng(seed)
    counts = np.array([f.n_levels for f in space.factors])
    drawn = valid = 0
    while not valid and drawn < MAX_DRAWS:
        index = rng.integers(0, counts, size=(sample, len(counts)))
        valid += int(space.constraint_mask(space.index_columns(index), sample).sum())
        drawn += sample
    if not valid:
        raise UserError(f"{space.explain_empty(space.from_level_index(index))} in {drawn:,} random draws")
    return int(round(valid / drawn * space.size)), False
