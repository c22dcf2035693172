"""Fuzz the cost-model graph reader (:func:`engine.surrogates.costmodel.readers.read_graph`) with files: graphs of
every flavour with fields dropped or replaced by arrays of any dtype, shape and value (NaN, inf, huge, negative,
text, objects, structures), written by numpy or by hand (any zip method, flags and declared sizes), then cut short
or with bytes changed; and plain bytes. Each must load or be refused with one line; what loads is usable."""

from __future__ import annotations

import io
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import UserError
from engine.surrogates.costmodel.readers import read_graph
from tests.fuzz.clean import parses_or_refuses
from tests.test_costmodel_readers import Member, deflated, npy_bytes, raw_zip, stored

FIELDS = ["node_opcode", "node_feat", "edge_index", "config_feat", "node_config_feat", "config_runtime",
          "config_runtime_normalizers", "config_error", "config_is_default", "node_splits", "node_config_ids",
          "config_index_to_node_id", "node_feat_names", "config_feat_names", "program", "task", "graph_flops"]
DTYPES = ["<f4", "<f8", ">f8", "<f2", "<i1", "<i4", ">i8", "<u1", "<u8", "|b1", "<U6", ">U3", "|S4", "<c8",
          "<M8[s]", "|V4", "O", "<f4,<i2"]
VALUES = [0, 1, -1, 2, 3, 7, 255, 2**31, -(2**63), 2**64 - 1, 0.5, 1e300, -1e-300, math.nan, math.inf, -math.inf,
          "add", "op1", "", "\x00", "é", "parameter", "tile", "layout", b"\xff", None]


def _filled(shape: tuple[int, ...], dtype: str, values: list[object]) -> np.ndarray:
    """An array of ``shape`` cycling through ``values``, converted to ``dtype`` where numpy can (zeros where not)."""
    flat = np.empty(math.prod(shape), dtype=object)
    flat[:] = [values[i % len(values)] for i in range(len(flat))]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return flat.reshape(shape).astype(dtype)
        except (ValueError, TypeError, OverflowError, UnicodeError):
            return np.zeros(shape, dtype)


def any_array(rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(d) for d in rng.integers(0, 5, rng.integers(0, 5)))
    values = [VALUES[i] for i in rng.integers(0, len(VALUES), rng.integers(1, 6))]
    return _filled(shape, DTYPES[rng.integers(len(DTYPES))], values)


def graph(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A graph of one flavour (published ids or names, tile or layout, optional fields), mostly valid.
    Sizes and values come from ``rng`` (one drawn seed): drawing each from Hypothesis costs 50 ms an example."""
    n, c, f = (int(v) for v in rng.integers(0, [7, 5, 4]))

    def ids(size: int | tuple[int, int]) -> np.ndarray:
        return rng.integers(0, max(n, 1), size)

    arrays = {
        "node_opcode": rng.integers(0, 256, n).astype(np.uint8) if rng.random() < 0.5 else np.array(["add", "parameter", "dot"] * n)[:n],
        "node_feat": rng.choice([0.0, 1.0, 2.5, -3.0, 1e3], (n, f)).astype(rng.choice(["<f4", "<f8", "<i4"])),
        "edge_index": ids((int(rng.integers(0, 7)) if n else 0, 2)),
        "config_runtime": rng.choice([-1, 0, 5, 100, 2**40], c),
    }
    if rng.random() < 0.5:
        nodes = ids(int(rng.integers(0, 4)) if n else 0)
        arrays["node_config_feat"] = rng.choice([-1.0, 0.0, 2.0], (c, len(nodes), 18)).astype(np.float32)
        arrays["node_config_ids" if rng.random() < 0.5 else "config_index_to_node_id"] = nodes
    else:
        arrays["config_feat"] = rng.choice([1.0, 8.0, 0.0], (c, rng.integers(0, 25))).astype(np.float32)
    optional: dict[str, np.ndarray] = {
        "node_splits": np.unique(np.r_[0, ids(int(rng.integers(0, 3)))]).reshape((1, -1) if rng.random() < 0.5 else (-1,)),
        "config_error": rng.integers(0, 2, c).astype(np.int8),
        "config_is_default": rng.integers(0, 2, c).astype(np.int8),
        "config_runtime_normalizers": np.full(c, rng.choice([1, 120, 0.5])),
        "node_feat_names": np.array([f"f{i}" for i in range(f)]),
        "program": np.array(rng.choice(["p", "row_softmax", ""])),
        "task": np.array(rng.choice(["tile", "absolute", "layout"])),
        "graph_flops": np.array(rng.choice([1.5e6, 0.0, math.nan])),
    }
    return arrays | {key: value for key, value in optional.items() if rng.random() < 0.4}


SEEDS = st.integers(0, 2**32 - 1)


@st.composite
def arrays(draw) -> dict[str, np.ndarray]:
    """A graph, or one with fields dropped, replaced or added: arrays of any dtype, shape and value."""
    rng = np.random.default_rng(draw(SEEDS))
    graph_arrays = graph(rng)
    for key in draw(DROPPED):
        graph_arrays.pop(key, None)
    return graph_arrays | {key: any_array(rng) for key in draw(ADDED)}


DROPPED = st.lists(st.sampled_from(FIELDS), max_size=2)
ADDED = st.lists(st.sampled_from(FIELDS) | st.text(max_size=6), max_size=2)
HOW = st.sampled_from(["savez", "compressed", "hand"])
DAMAGE = st.sampled_from(["none", "none", "cut", "flip", "word"])


@st.composite
def archive(draw) -> bytes:
    """The arrays written by numpy (stored or deflated) or by hand, with a member's method, flags or declared
    size made up; then maybe cut short or with a few bytes changed."""
    fields = draw(arrays())
    how = draw(HOW)
    if how == "hand":
        members = [(deflated if i % 2 else stored)(f"{key}.npy", npy_bytes(value)) for i, (key, value) in enumerate(fields.items())]
        if members and draw(st.booleans()):
            member: Member = members[draw(st.integers(0, len(members) - 1))]
            member.method = draw(st.sampled_from([0, 8, 12, 14, 99]))
            member.flags = draw(st.sampled_from([0, 1, 8, 0x40, 0x800]))
            member.size = draw(st.sampled_from([0, member.size - 1, member.size + 1, 2**31, 2**32 - 1]))
        data = raw_zip(members)
    else:
        buffer = io.BytesIO()
        (np.savez if how == "savez" else np.savez_compressed)(buffer, **fields)
        data = buffer.getvalue()
    damage = draw(DAMAGE)
    if damage == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    elif damage == "word":  # a size, offset or count field of a header, most likely
        at = draw(st.integers(0, len(data) - 4))
        data = data[:at] + draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x00\x00\x00\x80"])) + data[at + 4:]
    return data


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("npz")


def _reads_or_refuses(folder: Path, data: bytes) -> None:
    path = folder / "fuzz.npz"
    path.write_bytes(data)
    graph = parses_or_refuses(lambda: read_graph(path), (UserError,))
    if graph is not None:  # what loads is what the models may rely on
        assert np.isfinite(graph.node_feat).all() and np.isfinite(graph.config_feat).all()
        assert not (graph.runtime < 0).any() and ((graph.edges >= 0) & (graph.edges < len(graph.opcodes))).all()


@given(archive())
def test_npz_graphs(folder: Path, data: bytes) -> None:
    _reads_or_refuses(folder, data)


@given(st.binary(max_size=300) | st.binary(max_size=60).map(lambda tail: b"PK\x03\x04" + tail)
       | st.binary(max_size=60).map(lambda tail: b"\x93NUMPY" + tail))
def test_npz_any_bytes(folder: Path, data: bytes) -> None:
    _reads_or_refuses(folder, data)
