"""Fuzz the importers with bytes: CSV tables (:func:`engine.io.table_import.import_table`) and Kernel Tuner
caches (:func:`engine.io.ktcache.import_kt_cache`), plain, gzip-compressed, cut short or corrupted.
Each must import or be refused with one line."""

from __future__ import annotations

import gzip
import io
import json

from hypothesis import given
from hypothesis import strategies as st

from engine.io.ktcache import import_kt_cache
from engine.io.table_import import import_table
from tests.fuzz.clean import damage, parses_or_refuses

HEADER = st.sampled_from(["a", "b", "t", "time", "status", "error", "value", "x y", "lambda", "min", "", " a ", "a",
                         '"x\ny"', '"t\r"'])
CELL = st.sampled_from(["1", "2", "2.5", "-3", "", "nan", "NA", "inf", "true", "False", "ok", "failed", "x", "9" * 5000,
                        "1e400", '"q,"', "\r", " ", "\x00", "1" * 40]) | st.text(max_size=6)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(
    ["InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig", "ErrorConfig"])
JSON_LIKE = st.recursive(SCALAR, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                         max_leaves=12)


def _upload(data: bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(data)
    buffer.name = name
    return buffer


@st.composite
def wrapped(draw, text: bytes) -> bytes:
    """``text`` as is, gzip-compressed, cut short, or with a few bytes flipped."""
    how = draw(st.sampled_from(["plain", "gzip", "cut", "flip"]))
    return damage(draw, gzip.compress(text) if how != "plain" and draw(st.booleans()) else text, how)


@st.composite
def csv_bytes(draw) -> tuple[bytes, str]:
    columns = draw(st.lists(HEADER | st.text(max_size=5), min_size=1, max_size=5))
    rows = draw(st.lists(st.lists(CELL, min_size=0, max_size=len(columns) + 1), max_size=6))
    sep = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = sep.join(",".join(line) for line in [columns, *rows]).encode("utf-8", "surrogatepass")
    objective = draw(st.sampled_from(columns) | HEADER)
    return draw(wrapped(text)), objective


@st.composite
def kt_bytes(draw) -> bytes:
    keys = draw(st.lists(st.sampled_from(["x", "y", "block_size_x", "value", "time", ""]) | st.text(max_size=4),
                         min_size=0, max_size=3))
    levels = st.lists(st.integers(-3, 3) | st.booleans() | st.floats(-2, 2) | st.text(max_size=3) | JSON_LIKE,
                      max_size=4)
    params = draw(st.fixed_dictionaries({k: levels for k in keys}) | JSON_LIKE)
    record = st.dictionaries(st.sampled_from([*keys, "time", "GFLOP/s", "error", "__error__", "times",
                                              "compile_time"]) | st.text(max_size=4), SCALAR | JSON_LIKE, max_size=6)
    doc = {"tune_params_keys": keys if draw(st.booleans()) else draw(JSON_LIKE), "tune_params": params,
           "objective": draw(st.sampled_from(["time", "GFLOP/s", "x"]) | SCALAR),
           "cache": draw(st.dictionaries(st.text(max_size=6), record | JSON_LIKE, max_size=5) | JSON_LIKE)}
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 0, 2])), allow_nan=True).encode()
    return draw(wrapped(text))


IDENTS = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), min_size=1, max_size=4, unique=True)
GOOD_CELL = st.sampled_from(["1", "2", "4", "2.5", "x", "y", "true", "false", "", "nan", "inf", "-1"])


@st.composite
def good_csv(draw) -> tuple[bytes, str]:
    """A table that mostly imports: unique names, full rows, a numeric objective, then maybe one odd cell."""
    names = draw(IDENTS)
    value = st.one_of(*[st.floats(0, 10).map(repr)] * 6, st.sampled_from(["", "nan", "-inf"]), CELL)
    rows = [[draw(GOOD_CELL) for _ in names] + [draw(value)] for _ in range(draw(st.integers(1, 8)))]
    header = [*names, "t"]
    if "status" not in names and draw(st.booleans()):
        header.append("status")
        status = st.sampled_from(["ok", "ok", "ok", "failed", "invalid", "timeout", "OK", "?"])
        rows = [[*r, draw(status)] for r in rows]
    text = "\n".join(",".join(line) for line in [header, *rows]).encode("utf-8", "surrogatepass")
    return draw(wrapped(text)) if draw(st.booleans()) else text, "t"


@st.composite
def good_kt(draw) -> bytes:
    """A cache that mostly imports: levels of one type per parameter, records on the grid, KT's failure
    encodings, then maybe one odd value."""
    keys = draw(IDENTS)
    level = st.sampled_from([st.integers(-3, 40), st.booleans(), st.text(max_size=3), st.floats(-2, 2, allow_nan=False)])
    params = {k: draw(st.lists(draw(level), min_size=1, max_size=4, unique=True)) for k in keys}
    cache = {}
    for i in range(draw(st.integers(1, 6))):
        record = {k: draw(st.sampled_from(params[k])) for k in keys}
        record["time"] = draw(st.floats(0, 100) | st.sampled_from([1e20, "InvalidConfig", "RuntimeFailedConfig"])
                              | SCALAR)
        record.update(draw(st.dictionaries(st.sampled_from(["compile_time", "GFLOP/s", "error", "__error__",
                                                            "times"]), SCALAR | JSON_LIKE, max_size=2)))
        cache[",".join(map(str, record.values()))[:40] + str(i)] = record
    doc = {"tune_params_keys": keys, "tune_params": params, "objective": draw(st.sampled_from(["time", "GFLOP/s"])),
           "cache": cache, "kernel_name": draw(SCALAR), "device_name": draw(SCALAR)}
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 0, 2])), allow_nan=True).encode()
    return draw(wrapped(text)) if draw(st.booleans()) else text


@given(st.binary(max_size=300), st.sampled_from(["t", "a", "time"]))
def test_csv_any_bytes(data, objective):
    parses_or_refuses(lambda: import_table(_upload(data, "fuzz.csv"), objective))


@given(csv_bytes() | good_csv() | good_csv(), st.lists(HEADER, max_size=2))
def test_csv_shaped(case, ignore):
    data, objective = case
    parses_or_refuses(lambda: import_table(_upload(data, "fuzz.csv"), objective, ignore=ignore))


@given(st.binary(max_size=300))
def test_kt_cache_any_bytes(data):
    parses_or_refuses(lambda: import_kt_cache(_upload(data, "fuzz.json")))


@given(kt_bytes() | good_kt() | good_kt())
def test_kt_cache_shaped(data):
    parses_or_refuses(lambda: import_kt_cache(_upload(data, "fuzz.json")))


@given(st.integers(0, 3000), st.sampled_from([("[", "]"), ('{"a": ', "}")]), st.sampled_from(["1", "9" * 5000, ""]),
       st.sampled_from(["record", "params", "top"]))
def test_kt_cache_deep_nesting(depth, brackets, leaf, where):
    nested = brackets[0] * depth + leaf + brackets[1] * depth
    record = nested if where == "record" else '{"x": 1, "time": 1}'
    params = nested if where == "params" else '{"x": [1, 2]}'
    text = ('{"tune_params_keys": ["x"], "tune_params": ' + params + ', "cache": {"1": ' + record + "}"
            + (', "extra": ' + nested if where == "top" else "") + "}")
    parses_or_refuses(lambda: import_kt_cache(_upload(text.encode(), "deep.json")))
