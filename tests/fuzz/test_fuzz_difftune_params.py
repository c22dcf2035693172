"""Fuzz DiffTune's parameter-table readers (:func:`engine.surrogates.difftune.params.load`): JSON and key-value
``.txt`` files of any text, table-shaped documents whose fields are sometimes absurd (2**62 cycles, NaN, text,
a unit without pipes, names with spaces), and real tables' key-value lines dropped, repeated, cut or edited.
Each must load or be refused with one line. Files go to one folder per target, overwritten per example."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.surrogates.difftune.params import N_SLOTS, OpParams, ParamTable, load
from tests.fuzz.clean import parses_or_refuses

NAMES = st.sampled_from(["P0", "P1", "P23", "P01", "ADD64rr", "X@zero", "", "a b", "a.b", "#c", "key", "ra0",
                         "uops", "\x00", "ﬁ", "x" * 300])
ODD = (st.none() | st.booleans() | st.integers() | st.sampled_from([-1, 2**31, 2**62, 10**30, 10**400])
       | st.floats() | st.text(max_size=4) | NAMES)
JSON_LIKE = st.recursive(ODD, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                         max_leaves=8)


def pick(draw, good: st.SearchStrategy):
    """A value of ``good`` nine times in ten, else anything (one in ten per field leaves about a tenth of the
    documents whole); drawn in place, since a flatmap per field costs more than the load."""
    return draw(JSON_LIKE) if draw(st.sampled_from(range(10))) == 9 else draw(good)


@st.composite
def rows(draw) -> dict:
    row = {"uops": pick(draw, st.integers(0, 5)), "latency": pick(draw, st.integers(0, 6)),
           "read_advance": pick(draw, st.lists(st.integers(0, 5), min_size=N_SLOTS - 1, max_size=N_SLOTS + 1)),
           "port_cycles": pick(draw, st.dictionaries(NAMES, st.integers(0, 3), max_size=3))}
    if isinstance(row["read_advance"], list) and row["read_advance"]:
        row["read_advance"][0] = pick(draw, st.just(row["read_advance"][0]))
    if draw(st.sampled_from(range(10))) == 9:
        row[draw(NAMES)] = draw(ODD)
    return row


@st.composite
def documents(draw) -> dict:
    """A table document: a resource model, globals and rows, any field of which may be odd."""
    units = [pick(draw, st.tuples(st.sampled_from(["P0", "P1", "P23", "P5"]) | NAMES, st.integers(0, 4)).map(list))
             for _ in range(draw(st.integers(0, 4)))]
    names = [u[0] for u in units if isinstance(u, list) and u and isinstance(u[0], str)] or ["P0"]
    groups = [[draw(NAMES), pick(draw, st.lists(st.sampled_from(names), min_size=1, max_size=3))]
              for _ in range(draw(st.integers(0, 2)))]
    doc = {"dispatch_width": pick(draw, st.integers(1, 8)), "rob_size": pick(draw, st.integers(1, 300)),
           "units": units, "groups": pick(draw, st.just(groups)),
           "rows": pick(draw, st.dictionaries(NAMES, rows(), max_size=3))}
    optional = {"retire_width": st.integers(0, 8), "scheduler_size": st.integers(0, 60),
                "dependent_idioms": st.lists(NAMES, max_size=2), "provenance": st.dictionaries(NAMES, NAMES, max_size=2),
                "eliminated_moves": st.lists(NAMES, max_size=2),
                "register_files": st.lists(st.tuples(st.sampled_from(["gpr", "vec"]) | NAMES, st.integers(0, 9)).map(list),
                                           max_size=2),
                "buffers": st.lists(st.tuples(NAMES, st.integers(0, 9), st.lists(st.sampled_from(names), max_size=2))
                                    .map(list), max_size=2),
                "queues": st.lists(st.tuples(st.sampled_from(["load", "store"]) | NAMES, st.integers(0, 9)).map(list),
                                   max_size=2)}
    for name, good in optional.items():
        if draw(st.booleans()):
            doc[name] = pick(draw, good)
    if draw(st.sampled_from(range(10))) == 9:
        doc[draw(NAMES)] = draw(JSON_LIKE)
    return doc


TABLE = ParamTable(4, 192, units=(("P0", 1), ("P1", 1), ("P23", 2)), groups=(("P01", ("P0", "P1")),),
                   rows={"ADD64rr": OpParams(1, 1, port_cycles=(("P01", 1),)),
                         "ADD64rm": OpParams(2, 6, (5, 0, 0, 0, 0, 0, 0), (("P01", 1), ("P23", 1))),
                         "XOR32rr@zero": OpParams(1, 0)})
LINES = TABLE.to_key_values().splitlines()
TOKENS = st.sampled_from(["0", "1", "-1", "2.5", "nan", "1_0", "+3", "٣", "9" * 40, "4611686018427387904", "", " ",
                          "DispatchWidth", "ADD64rr.NumMicroOps", "ADD64rr.PortMap.P9", "ADD64rr.ReadAdvance.7",
                          "ADD64rr.Foo", "X..Y", "# tunelab parameter table: {}", "# tunelab parameter table: [",
                          "\x0b", "\u2028", "\r"]) | st.text(max_size=8)


@st.composite
def key_values(draw) -> str:
    """A real table's key-value lines, edited: lines dropped, repeated, swapped or replaced, values and keys
    changed, the header's JSON replaced, the text cut."""
    lines = list(LINES)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(lines) - 1)) if lines else 0
        how = draw(st.sampled_from(["drop", "repeat", "value", "key", "insert", "header"]))
        if how == "drop" and lines:
            del lines[at]
        elif how == "repeat" and lines:
            lines.insert(draw(st.integers(0, len(lines))), lines[at])
        elif how in ("value", "key") and lines:
            parts = lines[at].split(" ", 1) + [""]
            lines[at] = f"{draw(TOKENS)} {parts[1]}" if how == "key" else f"{parts[0]} {draw(TOKENS)}"
        elif how == "insert":
            lines.insert(at, " ".join(draw(st.lists(TOKENS, max_size=3))))
        else:
            lines[0 if lines else at:1] = [f"# tunelab parameter table: {json.dumps(draw(documents()))}"]
    text = draw(st.sampled_from(["\n", "\r\n"])).join(lines)
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-params")


def _loads(folder, name: str, data: bytes) -> None:
    path = folder / name
    path.write_bytes(data)
    parses_or_refuses(lambda: load(path))


@given(st.binary(max_size=300), st.sampled_from(["t.json", "t.txt"]))
def test_any_bytes(folder, data, name):
    _loads(folder, name, data)


@given(documents(), st.sampled_from([None, 0, 1]))
def test_table_shaped_json(folder, doc, indent):
    _loads(folder, "t.json", json.dumps(doc, indent=indent, allow_nan=True).encode())


@given(key_values())
def test_edited_key_value_files(folder, text):
    _loads(folder, "t.txt", text.encode("utf-8", "surrogatepass"))
