"""Model terms as a person picks them (linear, quadratic, cubic, inverse, pairwise interactions).

The term builder on the Design and Analyze pages edits a :class:`TermChoice`; the formula text box
shows :func:`to_formula` of it, and typing a formula updates the choice through :func:`from_formula`,
so the two views never disagree. Terms the builder has no checkbox for (``log(x)``, three-way
interactions…) are kept verbatim in ``extra``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.model.formula import FormulaError, parse
from engine.space.factors import Space

KINDS = ("linear", "quadratic", "cubic", "inverse")
_POWER = re.compile(r"^I\((\w+) \*\* ([23])\)$")
_INVERSE = re.compile(r"^I\(1 / (\w+)\)$")


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
        return (
            list(self.linear)
            + [f"I({f}^2)" for f in self.quadratic]
            + [f"I({f}^3)" for f in self.cubic]
            + [f"I(1/{f})" for f in self.inverse]
            + [f"{a}:{b}" for a, b in self.interactions]
            + list(self.extra)
        )

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
        if term in space.names:
            choice.linear.append(term)
        elif match := _POWER.match(term):
            (choice.quadratic if match.group(2) == "2" else choice.cubic).append(match.group(1))
        elif match := _INVERSE.match(term):
            choice.inverse.append(match.group(1))
        elif term.count(":") == 1 and all(part in space.names for part in term.split(":")):
            a, b = term.split(":")
            choice.interactions.append((a, b))
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


def _spans_powers_of_two(levels) -> bool:
    if len(levels) < 3 or min(levels) <= 0:
        return False
    powers = [v for v in levels if float(v).is_integer() and int(v) & (int(v) - 1) == 0]
    return len(powers) >= 3 and max(levels) / min(levels) >= 8
