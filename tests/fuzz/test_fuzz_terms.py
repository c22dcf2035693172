"""Fuzz the term builder's formula box (engine.model.choice.from_formula): any text gives a TermChoice
or is refused in one line, quickly; a choice it gives writes back to a formula that reads the same."""

from __future__ import annotations

import re

from hypothesis import event, given
from hypothesis import strategies as st

from engine.model.choice import from_formula, to_formula
from engine.space.factors import Factor, Space
from tests.fuzz.clean import parses_or_refuses
from tests.fuzz.test_fuzz_constraint import texts, time_limit
from tests.fuzz.test_fuzz_formula import formulas

SPACE = Space([
    Factor("tile", "ordinal", (1, 2, 4, 8, 16, 32)),
    Factor("unroll", "integer", (1, 2, 3)),
    Factor("vec", "boolean", None),
    Factor("opt", "categorical", ("O2", "O3")),
])
NAMES = {"x": "tile", "y": "unroll", "z": "vec", "c": "opt", "t": "tile"}
_COLUMN = re.compile(r"\b[xyzct]\b")


def _in_space(formula: str) -> str:
    """The formula grammar's columns renamed to this space's factors, so terms are recognised."""
    return _COLUMN.sub(lambda match: NAMES[match.group()], formula)


@given(formula=st.one_of(formulas.map(_in_space), formulas, texts))
def test_term_builder_reads_any_text_or_refuses(formula):
    with time_limit():
        choice = parses_or_refuses(lambda: from_formula(formula, SPACE))
        event("refused" if choice is None else "read, written back and read again")
        if choice is None:
            return
        again = parses_or_refuses(lambda: from_formula(to_formula(choice), SPACE))
        assert again is not None, to_formula(choice)
        assert sorted(again.terms()) == sorted(choice.terms()), to_formula(choice)
