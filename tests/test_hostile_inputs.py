"""Hostile input (issue 18): bounded work on tiny inputs, one-line refusals instead of tracebacks,
exports that no value can break out of, and dubious specs refused when the study is created."""

from __future__ import annotations

import csv
import gc
import gzip
import io
import json
import shutil
import subprocess
import time
import tracemalloc
import zlib

import pandas as pd
import pytest
import yaml

from engine.errors import UserError
from engine.io.best import BestConfig, export_best
from engine.io.export import study_to_csv
from engine.io.ktcache import import_kt_cache
from engine.io.spec import MAX_SPEC_BYTES, load_spec, parse_spec
from engine.io.table_import import MAX_DEPTH, MAX_IMPORT_BYTES, gunzip, import_table, read_bytes
from engine.space.factors import MAX_LEVELS, Factor, Space
from engine.space.text import parse_levels, space_from_table, valid_count
from engine.study import StudySpec
from tests.conftest import cli, run_cli

X = "  - {name: x, kind: ordinal, levels: [1, 2, 4]}\n"


def _spec(factors: str = X, constraints: str = "[]", extra: str = "") -> str:
    return f"name: s\n{extra}factors:\n{factors}constraints: {constraints}\n"


def refused(call, match: str) -> str:
    """Run ``call``; it must raise a UserError of one line matching ``match``. Returns the message."""
    with pytest.raises(UserError, match=match) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message and len(message) < 400, message
    return message


def _csv(text: str | bytes, name: str = "bench.csv") -> io.BytesIO:
    buffer = io.BytesIO(text.encode() if isinstance(text, str) else text)
    buffer.name = name
    return buffer


def _kt(cache: str, params: str = '{"x": [1, 2]}') -> bytes:
    return ('{"tune_params_keys": ["x"], "tune_params": ' + params + ', "objective": "time", "cache": '
            + cache + "}").encode()


# -- 1. unbounded work on tiny inputs -------------------------------------------------------------------


def test_yaml_billion_laughs_is_refused_at_the_first_alias():
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)]
    text = "name: s\nfactors: [{name: x, levels: [1]}]\nrunner: {kind: table}\ndescription:\n" + "".join(
        f"  {line}\n" for line in laughs)
    start = time.perf_counter()
    refused(lambda: parse_spec(text, "yaml"), r"malformed YAML at line 6, column \d+: alias \*a is not allowed")
    assert time.perf_counter() - start < 1.0


def test_yaml_anchor_alone_is_fine_but_any_alias_is_refused():
    assert parse_spec(_spec("  - {name: x, kind: ordinal, levels: &l [1, 2]}\n"), "yaml").space.size == 2
    refused(lambda: parse_spec(_spec("  - {name: x, levels: &l [1, 2]}\n  - {name: y, levels: *l}\n"), "yaml"),
            r"line 4, column 23: alias \*l is not allowed in a spec")


def _bomb(kind: str) -> bytes:
    """1 GiB of zeros in about 1 MB of gzip, built in well under a second."""
    if kind == "members":  # 1,024 valid gzip members of 1 MiB each
        return gzip.compress(bytes(2**20), 9) * 1024
    # one member: after a full flush every 1 MiB of zeros compresses to the same bytes; no trailer is
    # needed since the refusal comes 64 MiB in
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = deflate.compress(bytes(2**20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    body = deflate.compress(bytes(2**20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    return head + body * 1023


@pytest.mark.parametrize("kind", ["members", "single"])
def test_gzip_bomb_is_refused_without_inflating_it(kind):
    bomb = _bomb(kind)
    assert len(bomb) < 1.5 * 2**20
    if kind == "members":
        assert len(zlib.decompressobj(31).decompress(bomb[: len(bomb) // 1024])) == 2**20
    calls = [(lambda: import_table(_csv(bomb, "bomb.csv.gz"), "t"),
              rf"^table bomb\.csv\.gz: inflates to more than {MAX_IMPORT_BYTES:,} bytes, the most an import may hold$"),
             (lambda: import_kt_cache(_csv(bomb, "bomb.json.gz")), r"^kt-cache bomb\.json\.gz: inflates to more")]
    for call, match in calls:
        gc.collect()  # the previous refusal's traceback holds what it had inflated until collected
        tracemalloc.start()
        try:
            refused(call, match)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 100 * 2**20, f"{peak:,} bytes"


def test_gzip_limits_and_corrupt_streams_are_one_line(tmp_path):
    data = gzip.compress(b"a,t\n" + b"".join(b"%d,%d\n" % (i, i * 7919 % 104729) for i in range(5000)))
    corrupt = data[:20] + bytes(b ^ 0x55 for b in data[20:40]) + data[40:]
    refused(lambda: import_table(_csv(corrupt, "c.csv.gz"), "t"), r"^table c\.csv\.gz: not a valid gzip file \(Error -3")
    bad_crc = data[:-8] + bytes(4) + data[-4:]
    refused(lambda: gunzip(bad_crc, "table x"), r"not a valid gzip file .*incorrect data check")
    refused(lambda: gunzip(data, "table x", limit=1000), r"^table x: inflates to more than 1,000 bytes")
    assert 1000 < len(gunzip(data[: len(data) // 2], "table x")) < 40_000  # cut short: what it holds
    assert gunzip(data + data, "table x").count(b"\n4999,") == 2  # concatenated members
    refused(lambda: read_bytes(b"x" * 101, "table y", limit=100), r"^table y: more than 100 bytes")
    refused(lambda: read_bytes("/dev/zero", "table z", limit=1000), r"^table z: more than 1,000 bytes")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_SPEC_BYTES + 1))
    refused(lambda: load_spec(big), r"^spec big\.yaml: more than 1,000,000 bytes")


# -- 2. tracebacks instead of one line ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_refused_in_every_format(depth):
    nested = "[" * depth + "]" * depth
    refused(lambda: parse_spec(_spec(extra=f"description: {nested}\n"), "yaml"),
            rf"malformed YAML at line 2, column {MAX_DEPTH + 13}: lists or mappings nested more than {MAX_DEPTH} deep")
    json_spec = ('{"name": "s", "factors": [{"name": "x", "levels": [1]}], "runner": {"kind": "table", "x": '
                 + nested + "}}")
    refused(lambda: parse_spec(json_spec, "yaml"), r"malformed YAML at line 1, .*nested more than 32 deep")
    toml = f'name = "s"\nx = {nested}\n'
    refused(lambda: parse_spec(toml, "toml"),
            r"^spec: (malformed TOML: arrays or tables nested too deep|lists or mappings nested more)")
    refused(lambda: import_kt_cache(_kt('{"a": ' + nested + "}")),
            r"^kt-cache upload: lists or (objects|mappings) nested")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: parse_spec(_spec("  - {name: x, kind: ordinal, levels: [1, " + "9" * 5000 + "]}\n"), "yaml"),
         r"^factor 'x': level '99999.{40,80}… is outside the 64-bit integer range$"),
        (lambda: parse_spec(_spec("  - {name: x, kind: ordinal, levels: [1, 1" + "0" * 30 + "]}\n"), "yaml"),
         r"^factor 'x': level 1000000000000000000000000000000 is outside the 64-bit integer range$"),
        (lambda: parse_spec(_spec("  - {name: x, kind: integer, low: 1, high: " + "9" * 5000 + "}\n"), "yaml"),
         r"^factor 'x': low, high and step must be integers, got 1\.\.'9999.*…"),
        (lambda: parse_spec(_spec("  - {name: x, kind: ordinal, powers_of_two: [1, " + str(2**200) + "]}\n"), "yaml"),
         r"^factor 'x': level 9223372036854775808 is outside the 64-bit integer range$"),
        (lambda: parse_spec(_spec("  - {name: x, kind: integer, low: 0, high: 1" + "0" * 400 + ", step: 1"
                                  + "0" * 399 + "}\n"), "yaml"),
         r"^factor 'x': level 1000000000000000000.{40,80}… is outside the 64-bit integer range$"),
        (lambda: parse_spec('name = "s"\n[[factors]]\nname = "x"\nlevels = [' + "9" * 5000 + "]\n", "toml"),
         r"^spec: malformed TOML: a number has more digits than Python converts"),
        (lambda: parse_levels("1.." + "9" * 5000, "integer", "tile"),
         r"^factor 'tile': range '1\.\.9999.*… has a bound outside the 64-bit integer range$"),
        (lambda: space_from_table([{"name": "tile", "kind": "ordinal", "levels": "1, " + "9" * 5000}]),
         r"^factor 'tile': level '9999.*… is outside the 64-bit integer range$"),
        (lambda: Factor("x", "integer", (1, 1e300)), r"^factor 'x': level 1e\+300 is outside the 64-bit integer range$"),
        (lambda: import_kt_cache(_kt('{"1": {"x": 1, "time": ' + "9" * 5000 + "}}")),
         r"^kt-cache upload: a number is too long to read"),
        (lambda: import_kt_cache(_kt('{"1": {"x": 1, "time": 1}}', '{"x": [1, 1' + "0" * 30 + "]}")),
         r"^kt-cache upload: factor 'x': level 1000.* is outside the 64-bit integer range$"),
    ],
)
def test_huge_numbers_are_one_line_naming_the_field(call, match):
    refused(call, match)


# -- 3. exports no value can break out of ------------------------------------------------------------------

HOSTILE = {
    "OPT": "O3\r#define EVIL 1",
    "NL": "a\nb\n#define EVIL2 2\n",
    "CTRL": "\x01" + "23\x0089\x7f7\x1b[31m",
    "QUOTE": 'say "hi" \\',
    "TRI": "??/ ??= ??'",
    "UNI": "µs \u202e\u2028 ☃",
    "NEL": "x\x85  y",
    "NEG": -3,
    "NEGF": -0.5,
    "MZERO": -0.0,
    "BIG": 2**62,
    "ON": True,
}


def _hostile_best() -> BestConfig:
    return BestConfig("s */ #define EVIL3 1 /*", "t\r\n#define EVIL4 1", "minimize", HOSTILE, 1.5,
                      created_at="now\n#define EVIL5 1 */")


def _gcc_macros(path) -> dict[str, str]:
    def defines(source: str) -> dict[str, str]:
        out = subprocess.run(["gcc", "-E", "-dM", "-x", "c", source], capture_output=True, text=True, check=True)
        return {line.split(" ", 2)[1]: (line.split(" ", 2) + [""])[2] for line in out.stdout.splitlines()}

    builtin = defines("/dev/null")
    return {k: v for k, v in defines(str(path)).items() if k not in builtin}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_c_header_defines_exactly_the_intended_macros_and_bytes(tmp_path):
    header = export_best(_hostile_best(), "header")
    assert header.isascii()
    (tmp_path / "best.h").write_text(header)
    macros = _gcc_macros(tmp_path / "best.h")
    guard = "TUNELAB_BEST_S_____DEFINE_EVIL3_1____H"
    assert set(macros) == {guard, *HOSTILE}, macros
    assert macros["NEG"] == "(-3)" and macros["NEGF"] == "(-0.5)" and macros["MZERO"] == "(-0.0)"
    assert macros["BIG"] == str(2**62) and macros["ON"] == "1"
    texts = [name for name, value in HOSTILE.items() if isinstance(value, str)]
    dumps = "".join(f'  dump("{n}", {n}, sizeof({n}));\n' for n in texts)
    (tmp_path / "check.c").write_text(
        '#include <stdio.h>\n#include "best.h"\n#include "best.h"\n'
        "static void dump(const char *name, const char *s, size_t n) {\n"
        '  printf("%s", name);\n  for (size_t i = 0; i + 1 < n; i++) printf(" %02x", (unsigned char)s[i]);\n'
        '  printf("\\n");\n}\n'
        f"int main(void) {{\n{dumps}"
        '  printf("%d %g %lld %d\\n", 10-NEG, 1-NEGF, (long long)BIG, ON);\n  return 0;\n}\n')
    # -std=c11 turns trigraphs on: '??/' in a value would otherwise become a backslash
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "check"), str(tmp_path / "check.c")],
                   check=True, capture_output=True)
    lines = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, check=True).stdout.splitlines()
    expected = [" ".join([n, *(f"{b:02x}" for b in HOSTILE[n].encode())]) for n in texts]
    assert lines[:-1] == expected
    assert lines[-1] == f"13 1.5 {2**62} 1"


@pytest.mark.parametrize(
    ("config", "fmt", "match"),
    [
        ({"__FILE__": 1}, "header", r"factor name '__FILE__' is a C keyword or a reserved identifier"),
        ({"_Bool": 1}, "header", r"'_Bool' is a C keyword"),
        ({"defined": 1}, "header", r"'defined' is a C keyword"),
        ({"TUNELAB_BEST_S_H": 1}, "header", r"'TUNELAB_BEST_S_H' is the header's include guard"),
        ({"X": 2**63}, "header", r"X = 9223372036854775808 does not fit a C long long"),
        ({"X": float("nan")}, "header", r"X = nan cannot be written"),
        ({"größe": 1}, "env", r"factor name 'größe' cannot be a environment variable name"),
        ({"PATH": "/tmp"}, "env", r"factor name 'PATH' is a variable the shell or loader acts on"),
        ({"LD_PRELOAD": "/tmp/x.so"}, "env", r"'LD_PRELOAD' is a variable the shell"),
        ({"X": "a\nB=2"}, "env", r"^best configuration: X = 'a\\nB=2' holds control character '\\n'"),
        ({"X": "a\rb"}, "env", r"holds control character '\\r'"),
        ({"X": "a\u2028b"}, "env", r"holds control character '\\u2028'"),
    ],
)
def test_names_and_values_that_cannot_be_exported_are_refused(config, fmt, match):
    refused(lambda: export_best(BestConfig("s", "t", "minimize", config, 1.0), fmt), match)


def test_env_file_sets_exactly_the_intended_variables(tmp_path):
    config = {"Q": "it's \"$(touch pwned)\" `x` $HOME", "N": -3, "F": 0.5, "ON": False, "UNI": "µs\u202e"}
    best = BestConfig("s\r\nevil=1", "t\n#x", "minimize", config, 1.0)
    text = export_best(best, "env")
    assert len(text.splitlines()) == 1 + len(config) and len(text.split("\n")) == 2 + len(config)
    (tmp_path / "best.env").write_text(text)
    script = 'set -a; . ./best.env; printf "%s|%s|%s|%s|%s" "$Q" "$N" "$F" "$ON" "$UNI"'
    shown = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert shown.stdout == "|".join([config["Q"], "-3", "0.5", "0", config["UNI"]])
    assert not (tmp_path / "pwned").exists()


def test_csv_yaml_json_and_t4_carry_hostile_values_back_unchanged():
    best = _hostile_best()
    text = export_best(best, "csv")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 2 and rows[1][0] == HOSTILE["OPT"] and rows[1][1] == "'" + HOSTILE["NL"]  # a trailing blank: quoted for spreadsheets
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert len(frame) == 1 and frame.loc[0, "OPT"] == HOSTILE["OPT"] and frame.loc[0, "CTRL"] == HOSTILE["CTRL"]
    doc = json.loads(export_best(best, "json"))
    assert doc["configuration"] == HOSTILE and yaml.safe_load(export_best(best, "yaml")) == doc
    assert json.loads(export_best(best, "t4"))["results"][0]["configuration"] == HOSTILE


def test_study_csv_with_a_carriage_return_reimports_unchanged():
    spec = StudySpec("s", Space([Factor("mode", "categorical", ("a\rb", "c,d", 'e"f')), Factor("n", "ordinal", (1, 2))]))
    measured = pd.DataFrame({"mode": ["a\rb", "c,d", 'e"f'], "n": [1, 2, 1], "value": [1.0, 2.0, 3.0],
                             "status": ["ok"] * 3})
    imported = import_table(_csv(study_to_csv(spec, measured)), "time")
    assert imported.spec.space.factor("mode").levels == ("a\rb", "c,d", 'e"f')
    assert imported.table["mode"].tolist() == ["a\rb", "c,d", 'e"f'] and imported.table["value"].tolist() == [1, 2, 3]
    plain = StudySpec("s", Space([Factor("n", "ordinal", (1, 2))]))
    assert study_to_csv(plain, measured[["n", "value"]]) == "n,time\n1,1.0\n2,2.0\n1,3.0\n"  # minimal quoting kept


# -- 4. dubious input refused when the spec is read --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (_spec(extra="runner: {kind: tabel}\n"), r"^runner kind 'tabel' is not one of command, .*table"),
        (_spec(extra="runner: {kind: [table]}\n"), r"'runner' must be a mapping with a 'kind'"),
        (_spec("  - {name: lambda, levels: [1, 2]}\n"), r"^factor name 'lambda' is reserved in expressions"),
        (_spec("  - {name: 'True', levels: [1, 2]}\n"), r"^factor name 'True' is reserved"),
        (_spec("  - {name: min, levels: [1, 2]}\n"), r"^factor name 'min' is reserved"),
        (_spec("  - {name: log, levels: [1, 2]}\n"), r"^factor name 'log' is reserved"),
        (_spec("  - {name: I, levels: [1, 2]}\n"), r"^factor name 'I' is reserved"),
        (_spec("  - {name: C, levels: [1, 2]}\n"), r"^factor name 'C' is reserved"),
        (_spec("  - {name: np, levels: [1, 2]}\n"), r"^factor name 'np' is reserved"),
        (_spec("  - {name: \"\uFB01le\", levels: [1, 2]}\n"), r"reads as 'file' in expressions"),
        (_spec("  - {name: " + "x" * 101 + ", levels: [1, 2]}\n"), r"is longer than 100 characters"),
        ("name: s\nname: t\nfactors:\n" + X, r"^spec: malformed YAML at line 2, column 1: key 'name' appears twice$"),
        (_spec("  - {name: x, levels: [1], levels: [2]}\n"), r"at line 3, column 28: key 'levels' appears twice$"),
        (_spec(extra="runner: {kind: table, kind: command}\n"), r"at line 2, column 23: key 'kind' appears twice$"),
        (_spec("  - {name: x, kind: categorical, levels: [[1, 2], b]}\n"), r"^factor 'x': level \[1, 2\] is not a number"),
        (_spec("  - {name: x, kind: categorical, levels: [{a: 1}]}\n"), r"^factor 'x': level \{'a': 1\} is not a number"),
        (_spec("  - {name: x, kind: categorical, levels: [~, a]}\n"), r"^factor 'x': level None is not a number"),
        (_spec("  - {name: x, kind: integer, low: 0, high: 100000}\n"),
         r"^factor 'x': range 0\.\.100000 step 1 has more than 100,000 levels$"),
        (_spec(extra="runner: {kind: table, blob: !!binary aGk=}\n"), r"^spec\.runner\.blob: b'hi' is not text, a number"),
        ('name = "s"\nname = "t"\n', r"^spec: malformed TOML: Cannot overwrite a value"),
        ('name = "s"\nrunner = {kind = "table", at = 2024-01-01}\n[[factors]]\nname = "x"\nlevels = [1]\n',
         r"^spec\.runner\.at: datetime\.date\(2024, 1, 1\) is not text"),
    ],
)
def test_dubious_specs_are_refused_with_one_line(text, match):
    refused(lambda: parse_spec(text, "toml" if text.startswith("name =") else "yaml"), match)


def test_one_level_limit_however_levels_are_written():
    listed = "[" + ", ".join(map(str, range(MAX_LEVELS + 1))) + "]"
    assert len(Factor("x", "categorical", tuple(map(str, range(MAX_LEVELS)))).levels) == MAX_LEVELS
    refused(lambda: Factor("x", "ordinal", tuple(range(MAX_LEVELS + 1))),
            r"^factor 'x': the list of 100,001 levels has more than 100,000 levels$")
    refused(lambda: Factor("x", "categorical", tuple(map(str, range(120_000)))),
            r"the list of 120,000 levels has more than 100,000")
    refused(lambda: space_from_table([{"name": "x", "kind": "ordinal", "levels": listed[1:-1]}]),
            r"more than 100,000 levels")
    refused(lambda: parse_levels("0..100000", "integer", "x"),
            r"^factor 'x': range '0\.\.100000' has more than 100,000 levels$")
    assert len(parse_levels("1..100000", "integer", "x")) == MAX_LEVELS
    spec = parse_spec(_spec("  - {name: x, kind: integer, low: 1, high: 100000}\n"), "yaml")
    assert spec.space.factor("x").n_levels == MAX_LEVELS
    refused(lambda: Space.from_dict({"factors": [{"name": "x", "kind": "integer", "range": [1, 10**9]}]}),
            r"more than 100,000 levels")


def test_a_spec_whose_constraints_exclude_everything_is_refused_at_create(tmp_path, db_path):
    text = _spec(X + X.replace("name: x", "name: y"), "[x + y > 100]")
    assert parse_spec(text, "yaml").space.size == 9  # a draft may be edited on...
    refused(lambda: parse_spec(text, "yaml", satisfiable=True), r"^constraint 'x \+ y > 100' excludes every configuration$")
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    refused(lambda: load_spec(path), r"^empty\.yaml: constraint 'x \+ y > 100' excludes every configuration$")
    result = run_cli("study", "create", "--spec", str(path), db=db_path)
    assert result.returncode == 2 and "x + y > 100' excludes every configuration" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    typo = tmp_path / "typo.yaml"
    typo.write_text(_spec(extra="runner: {kind: tabel}\n"))
    result = cli("study", "create", "--spec", str(typo), db=db_path)
    assert result.returncode == 2 and "runner kind 'tabel' is not one of" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_satisfiability_of_a_huge_space_is_judged_by_sampling():
    levels = "[" + ", ".join(str(2**e) for e in range(12)) + "]"
    factors = "".join(f"  - {{name: t{i}, kind: ordinal, levels: {levels}}}\n" for i in range(8))
    refused(lambda: parse_spec(_spec(factors, "[t0 > 5000]"), "yaml", satisfiable=True),
            r"^constraint 't0 > 5000' excludes every configuration in 2,000,000 random draws$")
    sparse = "".join(f"  - {{name: x{i}, kind: integer, low: 0, high: 39}}\n" for i in range(5))
    spec = parse_spec(_spec(sparse, "[x0 == 7 and x1 == 3]"), "yaml", satisfiable=True)
    count, exact = valid_count(spec.space)
    assert not exact and 0 < count < spec.space.size


def test_kt_cache_duplicate_keys_and_deep_records_are_refused():
    refused(lambda: import_kt_cache(_kt('{"1": {"x": 1, "time": 1}, "1": {"x": 2, "time": 2}}')),
            r"^kt-cache upload: key '1' appears twice in one object$")
    refused(lambda: import_kt_cache(_kt('{"1": {"x": 1, "time": 1, "time": 0.5}}')), r"key 'time' appears twice")
    assert import_kt_cache(_kt('{"1": {"x": 1, "time": 1}, "2": {"x": 2, "time": 2}}')).report["valid_rows"] == 2


def test_messages_name_the_field_and_cut_the_value():
    message = refused(lambda: Factor("x", "ordinal", ("fast" * 1000,)), r"^factor 'x': level 'fastfast.*… is not numeric$")
    assert len(message) < 120
    refused(lambda: import_table(_csv("a,t\n1,3\n2," + "z" * 10_000 + "\n"), "t"),
            r"^table bench\.csv: objective 't' row 2: 'zzz.*… is not a number$")
    refused(lambda: import_table(_csv("a,t\n1,2\n", "evil\nname.csv"), "t"), r"^table evil\?name\.csv: no factor columns")
