"""Fuzz the spec reader (:func:`engine.io.spec.parse_spec`): any text, JSON-like data dumped as YAML,
JSON or TOML, spec-shaped data, and the dashboard templates with random edits. Each must parse or be
refused with one line."""

from __future__ import annotations

import json
import math

import yaml
from hypothesis import given
from hypothesis import strategies as st

from engine.io.spec import TEMPLATES, parse_spec
from engine.runners import RUNNER_KINDS
from engine.space.factors import KINDS
from tests.fuzz.clean import parses_or_refuses

NAMES = st.sampled_from(["x", "y", "tile", "lambda", "True", "min", "I", "np", "value", "größe", "ﬁ", "2x", ""])
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats() | st.text(max_size=12) | NAMES
)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8) | NAMES, children, max_size=4),
    max_leaves=20,
)
LEVELS = st.lists(SCALARS, max_size=6) | JSON_LIKE
FACTOR = st.fixed_dictionaries(
    {"name": NAMES | SCALARS},
    optional={
        "kind": st.sampled_from([*KINDS, "real", ""]) | SCALARS,
        "levels": LEVELS,
        "low": st.integers(-5, 5) | SCALARS,
        "high": st.integers(-5, 200_000) | SCALARS,
        "step": st.integers(-1, 5) | SCALARS,
        "range": st.lists(st.integers(-3, 10**6), max_size=4) | JSON_LIKE,
        "powers_of_two": st.lists(st.sampled_from([0, 1, 2, 3, 8, 1024, 2**70]), max_size=3) | JSON_LIKE,
        "extra": JSON_LIKE,
    },
)
IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True) | NAMES
GOOD_FACTOR = (
    st.fixed_dictionaries({"name": IDENT, "kind": st.just("ordinal"),
                           "levels": st.lists(st.integers(-100, 100) | st.floats(-1e3, 1e3), min_size=1, max_size=6)})
    | st.fixed_dictionaries({"name": IDENT, "kind": st.just("integer"), "low": st.integers(-5, 5),
                             "high": st.integers(-5, 20)}, optional={"step": st.integers(0, 4)})
    | st.fixed_dictionaries({"name": IDENT, "kind": st.just("categorical"),
                             "levels": st.lists(st.text(max_size=6), min_size=1, max_size=5)})
    | st.fixed_dictionaries({"name": IDENT, "kind": st.just("boolean")})
    | st.fixed_dictionaries({"name": IDENT, "kind": st.just("ordinal"),
                             "powers_of_two": st.lists(st.sampled_from([1, 2, 8, 64, 2**40]), min_size=2, max_size=2)})
)
CONSTRAINTS = st.lists(
    st.sampled_from(["x < y", "x + y > 100", "tile % 2 == 0", "min(x, y) >= 1", "x <", "__import__('os')", "z",
                     "x / 0 > 1", "x ** 100000 > 1", "x == 'a'", "abs(x) < 3", "x if x else 1"])
    | st.text(max_size=20),
    max_size=3,
) | JSON_LIKE
SPEC = st.fixed_dictionaries(
    {"name": st.sampled_from(["s", "my study", "../x", ""]) | SCALARS,
     "factors": st.lists(GOOD_FACTOR, min_size=1, max_size=4) | st.lists(GOOD_FACTOR | FACTOR, max_size=3) | JSON_LIKE},
    optional={
        "objective": st.sampled_from(["time", "x", "2x"]) | JSON_LIKE,
        "direction": st.sampled_from(["minimize", "maximize", "lowest"]) | SCALARS,
        "runner": st.fixed_dictionaries({"kind": st.sampled_from([*RUNNER_KINDS, "tabel"]) | SCALARS},
                                        optional={"x": JSON_LIKE}) | JSON_LIKE,
        "description": st.text(max_size=20) | SCALARS,
        "constraints": CONSTRAINTS,
    },
)


def _toml_value(value) -> str:
    """Inline TOML for JSON-like data (TOML has no null: it becomes the text "null")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps("null" if value is None else value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_key(key) -> str:
    return json.dumps(str(key), ensure_ascii=False).replace("\x7f", "\\u007f")


def _dump(data, fmt: str) -> tuple[str, str]:
    if fmt == "json":  # JSON is YAML flow style: what a JSON spec pasted into the dashboard meets
        return json.dumps(data, ensure_ascii=False), "yaml"
    if fmt == "toml":
        items = data.items() if isinstance(data, dict) else [("value", data)]
        return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in items), "toml"
    return yaml.safe_dump(data, allow_unicode=True), "yaml"


@given(st.text(max_size=400), st.sampled_from(["yaml", "toml"]), st.booleans())
def test_any_text(text, fmt, satisfiable):
    parses_or_refuses(lambda: parse_spec(text, fmt, satisfiable=satisfiable))


@given(SPEC | SPEC | JSON_LIKE, st.sampled_from(["yaml", "json", "toml"]), st.booleans())
def test_structured_data(data, fmt, satisfiable):
    text, parsed_as = _dump(data, fmt)
    parses_or_refuses(lambda: parse_spec(text, parsed_as, satisfiable=satisfiable))


@given(st.sampled_from(sorted(TEMPLATES)), st.data())
def test_edited_templates(title, data):
    text = TEMPLATES[title]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 6))
        insert = data.draw(st.sampled_from(["[", "]", "{", "}", ":", "-", "\n", "  ", "&a ", "*a", "!!binary ", "'",
                                            "\"", "9" * 30, "9" * 5000, ", 1.5", "\t", "#", "\x00", "\r"]) | st.text(max_size=4))
        text = text[:at] + insert + text[at + cut:]
    parses_or_refuses(lambda: parse_spec(text, "yaml", satisfiable=data.draw(st.booleans())))


OPENERS = {"yaml": [("[", "]"), ("{a: ", "}"), ("- ", ""), ('{"a": ', "}")], "toml": [("[", "]"), ("{a = ", "}")]}


@given(st.integers(0, 3000), st.sampled_from(["yaml", "toml"]), st.data())
def test_deep_nesting(depth, fmt, data):
    opener, closer = data.draw(st.sampled_from(OPENERS[fmt]))
    body = opener * depth + data.draw(st.sampled_from(["1", "9" * 5000, "x", ""])) + closer * depth
    text = (f"name: s\nfactors: [{{name: x, levels: [1]}}]\ndescription: {body}\n" if fmt == "yaml"
            else f'name = "s"\ndescription = {body}\n[[factors]]\nname = "x"\nlevels = [1]\n')
    parses_or_refuses(lambda: parse_spec(text, fmt))
