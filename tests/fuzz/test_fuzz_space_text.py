"""Fuzz the Space page's text forms (:mod:`engine.space.text`): level text, whole factor tables with
constraints, and the valid count the page shows. Each must work or be refused with one line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.space.factors import KINDS
from engine.space.text import parse_levels, space_from_table, valid_count
from tests.fuzz.clean import parses_or_refuses

KIND = st.sampled_from([*KINDS, "", "real"])
BIG = st.integers(-(2**70), 2**70).map(str) | st.just("9" * 5000)
NUMBER = st.integers(-50, 50).map(str) | BIG | st.floats().map(repr) | st.sampled_from(["1e400", "nan", "-0", "1_0"])
LEVEL_TEXT = (
    st.text(max_size=60)
    | st.builds(lambda a, b: f"{a}..{b}", NUMBER, NUMBER)
    | st.builds(lambda a, b, s: f"{a} .. {b} step {s}", NUMBER, NUMBER, NUMBER)
    | st.builds(lambda a, b: f"2^{a}..2^{b}", st.integers(-2, 70) | BIG, st.integers(-2, 70) | BIG)
    | st.lists(NUMBER | st.text(max_size=5), max_size=8).map(", ".join)
)
NAME = st.sampled_from(["x", "y", "tile", "lambda", "min", "True", "größe", "ﬁ", "2x", "a b", ""]) | st.text(max_size=8)
ROW = st.fixed_dictionaries({"name": NAME, "kind": KIND, "levels": LEVEL_TEXT})
SMALL_ROW = st.fixed_dictionaries({  # rows that usually build, so constraints and counting are reached
    "name": st.sampled_from(["x", "y", "tile"]),
    "kind": st.sampled_from(["ordinal", "integer", "categorical", "boolean"]),
    "levels": st.sampled_from(["1, 2, 4", "1..6", "0..100 step 10", "2^0..2^5", "a, b", "", "true, false"]),
})
CONSTRAINT = st.sampled_from([
    "x < y", "x + y > 100", "tile % 2 == 0", "min(x, y) >= 1", "x <", "__import__('os')", "z > 1", "x / 0 > 1",
    "x ** 1000 > 1", "tile == 'a'", "# a comment", "abs(x - y) <= 2", "x if y else tile", "not x",
]) | st.text(max_size=20)


@given(st.text(max_size=200) | LEVEL_TEXT, KIND, NAME)
def test_level_text(text, kind, name):
    parses_or_refuses(lambda: parse_levels(text, kind, name))


@given(st.lists(ROW | SMALL_ROW, max_size=4), st.lists(CONSTRAINT, max_size=3).map("\n".join))
def test_factor_table(rows, constraints):
    parses_or_refuses(lambda: space_from_table(rows, constraints))


@given(st.lists(SMALL_ROW, min_size=1, max_size=4), st.lists(CONSTRAINT, max_size=3).map("\n".join))
def test_factor_table_and_valid_count(rows, constraints):
    parses_or_refuses(lambda: valid_count(space_from_table(rows, constraints)))
