"""Spec files: YAML/TOML parsing, round trips, hostile input and the dashboard templates."""

from __future__ import annotations

import json

import pytest

from engine.errors import UserError
from engine.io.spec import FORMATS, TEMPLATES, dump_spec, load_spec, parse_spec
from tests.conftest import cli, run_cli

FULL = """\
name: Round trip
description: "Quotes \\" and unicode: µs, tabs\\t, #hash"
objective: {name: gflops, direction: maximize}
runner: {kind: command, argv: ["./run", "--x={x}"], timeout_s: 30, env: {OMP_NUM_THREADS: "4"}}
factors:
  - {name: x, kind: ordinal, levels: [0.5, 0.25, 1.0e-10, 3]}
  - {name: n, kind: integer, low: 2, high: 12, step: 5}
  - {name: p, kind: ordinal, powers_of_two: [4, 64]}
  - {name: flag, kind: boolean}
  - {name: mode, kind: categorical, levels: ["yes", "1", "a b", "-O3", "null"]}
constraints:
  - n * p <= 500
  - mode != 'null' or flag
"""


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_factor_kind(fmt):
    spec = parse_spec(FULL, "yaml")
    assert spec.direction == "maximize" and spec.objective == "gflops"
    assert spec.space.factor("n").levels == (2, 7, 12)
    assert spec.space.factor("p").levels == (4, 8, 16, 32, 64)
    assert spec.space.factor("x").levels == (1e-10, 0.25, 0.5, 3)
    assert spec.space.factor("mode").levels == ("yes", "1", "a b", "-O3", "null")
    text = dump_spec(spec, fmt)
    again = parse_spec(text, fmt)
    assert again == spec
    assert again.to_dict() == spec.to_dict()
    assert dump_spec(again, fmt) == text


def test_load_spec_by_extension(tmp_path):
    spec = parse_spec(FULL, "yaml")
    for suffix, fmt in ((".yaml", "yaml"), (".yml", "yaml"), (".toml", "toml")):
        path = tmp_path / f"study{suffix}"
        path.write_text(dump_spec(spec, fmt), encoding="utf-8")
        assert load_spec(path) == spec
    (tmp_path / "study.json").write_text("{}")
    with pytest.raises(UserError, match=r"extension '\.json'"):
        load_spec(tmp_path / "study.json")
    with pytest.raises(UserError, match="no such file"):
        load_spec(tmp_path / "missing.yaml")


def test_load_spec_prefixes_the_file_name(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "s"\nfactors = []\n')
    with pytest.raises(UserError, match=r"^bad\.toml: spec: 'factors' must be a non-empty list"):
        load_spec(path)


def test_malformed_yaml_names_the_line():
    text = "name: s\nfactors:\n  - {name: x, levels: [1, 2}\n"
    with pytest.raises(UserError, match=r"malformed YAML at line 3") as info:
        parse_spec(text, "yaml")
    assert "\n" not in str(info.value)


def test_malformed_toml_names_the_line():
    text = 'name = "s"\nobjective = \n'
    with pytest.raises(UserError, match=r"malformed TOML: .*line 2"):
        parse_spec(text, "toml")


def test_yaml_tags_are_not_constructed():
    text = "name: !!python/object/apply:os.system ['echo pwned']\nfactors: [{name: x, levels: [1, 2]}]\n"
    with pytest.raises(UserError, match="malformed YAML at line 1"):
        parse_spec(text, "yaml")


def _spec(factors: str, constraints: str = "[]", extra: str = "") -> str:
    return f"name: s\n{extra}factors:\n{factors}constraints: {constraints}\n"


X = "  - {name: x, kind: ordinal, levels: [1, 2, 4]}\n"
Y = "  - {name: y, kind: ordinal, levels: [1, 2, 4]}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("description: no name\nfactors: [{name: x, levels: [1]}]\n", r"^spec: missing 'name'$"),
        (_spec(X + X), r"duplicate factor name 'x'"),
        (_spec("  - {name: x, kind: ordinal, levels: []}\n"), r"factor 'x': empty level list"),
        (_spec("  - {name: x, kind: ordinal, levels: [1, big, 3]}\n"), r"factor 'x': level 'big' is not numeric"),
        (_spec("  - {name: x, kind: integer, levels: [1, 2.5]}\n"), r"factor 'x': level 2.5 is not an integer"),
        (_spec(X, "[\"__import__('os')\"]"), r"call to '__import__' is not allowed"),
        (_spec(X, "[\"x.__class__ == 1\"]"), r"attribute access"),
        (_spec(X, "[z < 3]"), r"unknown name 'z'"),
        (_spec(X, "[x <]"), r"syntax error"),
        (_spec(X, extra="constriants: [x < 3]\n"), r"unknown key 'constriants'"),
        (_spec("  - {name: x, kind: integer, low: 1, hgh: 8}\n"), r"factor 'x': unknown key 'hgh'"),
        (_spec("  - {name: x, kind: integer, low: 1}\n"), r"factor 'x': needs both 'low' and 'high'"),
        (_spec("  - {name: x, kind: integer, low: 1, high: 1000000000}\n"), r"more than 100,000 levels"),
        (_spec("  - {name: x, kind: ordinal, low: 1, high: 8}\n"), r"need kind: integer"),
        (_spec("  - {name: x, kind: ordinal, powers_of_two: [0, 8]}\n"), r"powers_of_two must be"),
        (_spec("  - {name: x, kind: ordinal, powers_of_two: [3, 8]}\n"), r"powers_of_two must be"),
        (_spec("  - {name: x, kind: ordinal, levels: '1,2,3'}\n"), r"'levels' must be a list"),
        (_spec("  - {name: x, kind: fancy, levels: [1]}\n"), r"kind 'fancy' is not one of"),
        (_spec("  - {name: 2x, levels: [1]}\n"), r"must be an identifier"),
        (_spec("  - just a string\n"), r"factor #1 must be a mapping"),
        (_spec(X, extra="runner: table\n"), r"'runner' must be a mapping with a 'kind'"),
        (_spec(X, extra="direction: lowest\n"), r"direction 'lowest'"),
        (_spec(X, extra="objective: x\n"), r"objective 'x' is also a factor name"),
        ("name: s\nfactors: {x: [1, 2]}\n", r"'factors' must be a non-empty list"),
        ("- a\n- b\n", r"expected a mapping"),
        ("name: ../../etc\nfactors: [{name: x, levels: [1]}]\n", r"study name '../../etc'"),
    ],
)
def test_hostile_specs_fail_with_one_line(text, message):
    with pytest.raises(UserError, match=message) as info:
        parse_spec(text, "yaml")
    assert "\n" not in str(info.value)


def test_constraint_excluding_everything_fails_at_enumeration():
    spec = parse_spec(_spec(X + Y, "[x + y > 100]"), "yaml")
    with pytest.raises(UserError, match=r"constraint 'x \+ y > 100' excludes every configuration"):
        spec.space.enumerate()


def test_single_string_constraint_is_one_constraint():
    spec = parse_spec(_spec(X + Y, "x <= y"), "yaml")
    assert spec.space.constraints == ("x <= y",)
    assert len(spec.space.enumerate()) == 6


def test_oversized_spec_is_refused():
    with pytest.raises(UserError, match="more than a spec may hold"):
        parse_spec("name: s\n" + "#" * 2_000_000, "yaml")


def test_unknown_format():
    with pytest.raises(UserError, match="'json' must be 'yaml' or 'toml'"):
        parse_spec("{}", "json")


@pytest.mark.parametrize("title", list(TEMPLATES))
def test_templates_parse_into_non_empty_spaces(title):
    spec = parse_spec(TEMPLATES[title], "yaml")
    space = spec.space
    if space.enumerable:
        assert len(space.enumerate()) > 0
    else:
        assert len(space.sample(20, seed=1)) == 20
    for fmt in FORMATS:
        assert parse_spec(dump_spec(spec, fmt), fmt) == spec


def test_template_contents():
    toy = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    assert toy.space.names == [f"x{i}" for i in range(1, 9)]
    assert toy.space.factor("x5").levels == tuple(round(-1 + 0.2 * i, 1) for i in range(11))
    assert dict(toy.runner) == {"kind": "synthetic", "name": "toy"}
    gpu = parse_spec(TEMPLATES["GPU kernel (tile sizes, constraints)"], "yaml")
    assert len(gpu.space.factors) == 7 and len(gpu.space.constraints) == 3
    assert gpu.runner["kind"] == "table"
    cpu = parse_spec(TEMPLATES["CPU loop nest (tiles, unroll, flags)"], "yaml")
    kinds = {f.kind for f in cpu.space.factors}
    assert {"boolean", "categorical"} <= kinds
    assert cpu.runner["kind"] == "command" and all(isinstance(a, str) for a in cpu.runner["command"])


def test_the_command_template_builds_a_runner_of_its_factors():
    from engine.runners import runner_from_spec

    cpu = parse_spec(TEMPLATES["CPU loop nest (tiles, unroll, flags)"], "yaml")
    runner = runner_from_spec(cpu.runner, space=cpu.space)
    assert set(runner.placeholders) == set(cpu.space.names) and runner.timeout == 1200


CMD = "  - {name: n, kind: ordinal, levels: [1, 2]}\n"


@pytest.mark.parametrize(
    ("runner", "message"),
    [
        ('{kind: command, command: "./bench --n={n} \'a b\'", metric: {regex: "t=(.*)"}}',
         r"^spec: runner 'command' must be a list of arguments, not the text \"\./bench --n=\{n\} 'a b'\" "
         r"\(no shell runs it\): give \['\./bench', '--n=\{n\}', 'a b'\]$"),
        ('{kind: command, command: "./bench | tee log", metric: {regex: x}}', r"put the pipe or redirection in a script"),
        ("{kind: command, command: 'make \"unclosed', metric: {regex: x}}", r"must be a list of arguments, not the text"),
        ("{kind: command, command: [], metric: {regex: x}}", r"runner 'command' must be a non-empty list of arguments"),
        ("{kind: command, command: [./bench, [--n, 2]], metric: {regex: x}}", r"argument \['--n', 2\] is not text"),
        ("{kind: command, command: {run: ./bench}, metric: {regex: x}}", r"must be a list of arguments, not \{'run'"),
    ],
)
def test_a_command_that_is_not_an_argument_list_is_refused(runner, message):
    with pytest.raises(UserError, match=message) as info:
        parse_spec(_spec(CMD, extra=f"runner: {runner}\n"), "yaml")
    assert "\n" not in str(info.value)


def test_a_command_as_an_argument_list_is_accepted():
    spec = parse_spec(_spec(CMD, extra="runner: {kind: command, command: [./bench, '--n={n}', 3], metric: {regex: x}}\n"),
                      "yaml")
    assert spec.runner["command"] == ["./bench", "--n={n}", 3]


@pytest.mark.parametrize("name", ["value", "status", "error", "repeat", "host", "started_at", "finished_at", "strategy",
                                  "step", "design_id", "measurement_id", "n_repeats"])
def test_a_factor_named_like_a_measurement_column_is_refused(name):
    with pytest.raises(UserError, match=rf"^spec: factor '{name}' is reserved: Tunelab's measurement tables have"):
        parse_spec(_spec(X + f"  - {{name: {name}, kind: ordinal, levels: [1, 2]}}\n"), "yaml")


@pytest.mark.parametrize("name", ["status", "error", "repeat", "host", "step", "n_repeats"])
def test_an_objective_named_like_a_measurement_column_is_refused(name):
    with pytest.raises(UserError, match=rf"^spec: objective '{name}' is reserved: Tunelab's measurement tables"):
        parse_spec(_spec(X, extra=f"objective: {name}\n"), "yaml")


def test_an_objective_named_value_is_the_value_column_itself():
    """The measurements' value column is the objective: exports name it after the objective, so ``value`` is fine."""
    assert parse_spec(_spec(X, extra="objective: value\n"), "yaml").objective == "value"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("objective: t\nrunner: {kind: command, command: './bench --n={n}', metric: {regex: 't=(.*)'}}\n",
         "spec: runner 'command' must be a list of arguments, not the text './bench --n={n}' (no shell runs it): "
         "give ['./bench', '--n={n}']"),
        ("objective: t\nfactors:\n  - {name: value, kind: ordinal, levels: [1, 2]}\n", "spec: factor 'value' is reserved"),
        ("objective: status\n", "spec: objective 'status' is reserved"),
    ],
)
def test_study_create_refuses_a_spec_it_could_not_use(tmp_path, lines, message):
    text = "name: unusable\n" + lines + ("" if "factors:" in lines else "factors:\n") + CMD
    (tmp_path / "unusable.yaml").write_text(text, encoding="utf-8")
    db = tmp_path / "t.duckdb"
    result = run_cli("study", "create", "--spec", str(tmp_path / "unusable.yaml"), db=db)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    said = result.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(f"tunelab: error: unusable.yaml: {message}")
    assert json.loads(cli("study", "list", "--json", db=db).stdout) == []
