"""The term grammar of the term builder: ``x``, ``I(x^2)``, ``I(x^3)``, ``I(1/x)`` and products ``a:b``.

One grammar for both readers of term labels: :mod:`engine.model.choice` (checkboxes from a formula,
whose labels come back from the parser as ``I(x ** 2)``) and :mod:`engine.model.columns` (the model
strategies' fast columns, given R spellings). Each piece of a term is a factor and a power: 1, 2, 3,
or -1 for the inverse. Kept free of numpy and the strategies so both can import it without a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from engine.errors import UserError

_POWER = re.compile(r"^I\(\s*(\w+)\s*(?:\^|\*\*)\s*([23])\s*\)$")
_INVERSE = re.compile(r"^I\(\s*1\s*/\s*(\w+)\s*\)$")

#: A factor and its power (1, 2, 3; -1 is the inverse).
Part = tuple[str, int]


def term_parts(label: str, names: Collection[str]) -> tuple[Part, ...]:
    """The (factor, power) parts of a term label over the factors ``names``.

    Raises :class:`UserError` naming the first piece outside the grammar or the unknown factor.
    """
    parts = []
    for piece in label.split(":"):
        piece = piece.strip()
        if piece in names:
            parts.append((piece, 1))
        elif match := _POWER.match(piece):
            parts.append((match.group(1), int(match.group(2))))
        elif match := _INVERSE.match(piece):
            parts.append((match.group(1), -1))
        else:
            raise UserError(f"model term {label!r}: only x, I(x^2), I(x^3), I(1/x) and a:b are supported here")
        if parts[-1][0] not in names:
            raise UserError(f"model term {label!r}: unknown factor '{parts[-1][0]}'")
    return tuple(parts)


def term_name(factor: str, power: int) -> str:
    """R spelling of a single-factor term (what the term builder writes)."""
    return {1: factor, 2: f"I({factor}^2)", 3: f"I({factor}^3)", -1: f"I(1/{factor})"}[power]
