"""Model terms as a person picks them (linear, quadratic, cubic, inverse, pairwise interactions).

The term builder on the Design and Analyze pages edits a :class:`TermChoice`; the formula text box
shows :func:`to_formula` of it, and typing a formula updates the choice through :func:`from_formula`,
so the two views never disagree. Terms the builder has no checkbox for (``log(x)``, three-way
interactions…) are kept verbatim in ``extra``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import UserError
from engine.model.formula import FormulaError, parse
from engine.model.terms import term_name, term_parts
from engine.space.factors import Space

KINDS = ("linear", "quadratic", "cubic", "inverse")
#: Power of each single-factor kind, in the grammar of :mod:`engine.model.terms`.
_POWERS = dict(zip(KINDS, (1, 2, 3, -1), strict=True))
_KIND_OF = {power: kind for kind, power in _POWERS.items()}


@dataclass
class TermChoice:
    """Which terms of which factors are in the model, in a form checkboxes can show."""

    linear: list[str] = field(default_factory=list)
    quadratic: list[str] = field(default_factory=list)
    cubic: list[str] = field(default_factory=list)
    inverse: list[str] = field(default_factory=list)
    interactions: list[tuple[str, str]] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def terms(self) -> list[str]:
        """Terms in R spelling, grouped linear, quadratic, cubic, inverse, interactions, extra."""
        single = [term_name(f, _POWERS[kind]) for kind in KINDS for f in getattr(self, kind)]
        return single + [f"{a}:{b}" for a, b in self.interactions] + list(self.extra)

    @property
    def n_terms(self) -> int:
        return len(self.terms())

    def factors(self) -> set[str]:
        used = set(self.linear) | set(self.quadratic) | set(self.cubic) | set(self.inverse)
        return used | {f for pair in self.interactions for f in pair}


def to_formula(choice: TermChoice, response: str | None = None) -> str:
    rhs = " + ".join(choice.terms()) or "1"
    return f"{response} ~ {rhs}" if response else f"~ {rhs}"


def from_formula(formula: str, space: Space) -> TermChoice:
    """The checkbox view of ``formula`` (checked against the space's factor names; a response is ignored)."""
    if not isinstance(formula, str):
        raise FormulaError(f"formula: expected text, got {type(formula).__name__}")
    parsed = parse("~ " + formula.split("~", 1)[-1], space.names)
    choice = TermChoice()
    for term in parsed.terms:
        try:
            parts = term_parts(term, space.names)
        except UserError:  # outside the builder's grammar: an extra term
            parts = ()
        if len(parts) == 1:
            factor, power = parts[0]
            getattr(choice, _KIND_OF[power]).append(factor)
        elif len(parts) == 2 and all(power == 1 for _, power in parts):
            choice.interactions.append((parts[0][0], parts[1][0]))
        else:
            choice.extra.append(term)
    return choice


def default_choice(space: Space) -> TermChoice:
    """DLMT's initial model derived from the space (docs/dlmt.md §5.1, paper runs).

    Linear terms for every factor with more than one level; quadratic terms for numeric factors with
    at least 3 levels and cubic ones with at least 4; inverse terms for positive numeric factors
    whose levels span powers of two (tile sizes, thread counts), where 1/x is the natural shape.
    """
    choice = TermChoice()
    for f in space.factors:
        if f.n_levels < 2:
            continue
        choice.linear.append(f.name)
        if not f.numeric:
            continue
        if f.n_levels >= 3:
            choice.quadratic.append(f.name)
        if f.n_levels >= 4:
            choice.cubic.append(f.name)
        if _spans_powers_of_two(f.levels):
            choice.inverse.append(f.name)
    return choice


def _spans_powers_of_two(levels: Sequence[Any]) -> bool:
    if len(levels) < 3 or min(levels) <= 0:
        return False
    powers = [v for v in levels if float(v).is_integer() and int(v) & (int(v) - 1) == 0]
    return len(powers) >= 3 and max(levels) / min(levels) >= 8
