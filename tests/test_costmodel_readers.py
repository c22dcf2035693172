"""Cost-model readers: the real converted TPU samples against their summary and the HLO semantics they encode,
synthetic files in the published TpuGraphs and Tunelab formats, and a one-line error for every malformed input."""

from __future__ import annotations

import bz2
import io
import json
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format

from engine.errors import UserError
from engine.surrogates.costmodel import readers
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.readers import (
    LAYOUT_CONFIG_NAMES,
    TILE_CONFIG_NAMES,
    read_folder,
    read_graph,
    real_tpu_layout,
    real_tpu_tiles,
)

LEAVES = {"parameter", "constant", "iota"}  # HLO ops without operands: they consume nothing


# ---------------------------------------------------------------- real converted samples


@pytest.fixture(scope="module")
def tpu(data: Path) -> Path:
    folder = data / "tpugraphs" / "npz_from_pb"
    if not folder.is_dir():
        pytest.skip("the real TPU samples are absent")
    return folder


@pytest.fixture(scope="module")
def tiles(tpu: Path) -> list[TensorGraph]:
    return real_tpu_tiles()


@pytest.fixture(scope="module")
def layout(tpu: Path) -> TensorGraph:
    return real_tpu_layout()


def test_real_tiles_match_the_summary(tpu: Path, tiles: list[TensorGraph]) -> None:
    summary = json.loads((tpu / "summary.json").read_text())["tile"]
    assert [g.name for g in tiles] == [row["kernel"] for row in summary]
    for graph, row in zip(tiles, summary, strict=True):
        assert (graph.task, graph.program) == ("tile", row["kernel"])
        got = (len(graph.opcodes), len(graph.edges), len(graph.runtime), int(graph.valid.sum()))
        assert got == (row["nodes"], row["edges"], row["configs"], row["valid"]), graph.name
        assert (np.nanmin(graph.runtime), np.nanmax(graph.runtime)) == (row["rt_min_ns"], row["rt_max_ns"])
        assert sorted(set(graph.opcodes)) == row["opcodes"]
        assert graph.config_feat_names == TILE_CONFIG_NAMES and len(graph.feat_names) == 24
        assert graph.default is not None and graph.valid[graph.default] and graph.normalizer is None
    assert sum(len(g.runtime) for g in tiles) == 754 and sum(int(g.valid.sum()) for g in tiles) == 752


def _computation(graph: TensorGraph) -> np.ndarray:
    return np.searchsorted(graph.node_splits, np.arange(len(graph.opcodes)), side="right") - 1


def _roots(graph: TensorGraph) -> np.ndarray:
    return graph.node_feat[:, graph.feat_names.index("is_root")] == 1


@pytest.mark.parametrize("which", ["tiles", "layout"])
def test_edges_run_from_consumer_to_operand(which: str, request: pytest.FixtureRequest) -> None:
    graphs = request.getfixturevalue(which)
    for graph in graphs if isinstance(graphs, list) else [graphs]:
        users, operands = graph.edges.T
        assert not LEAVES & set(graph.opcodes[users]), graph.name
        comp = _computation(graph)
        inside = comp[users] == comp[operands]
        assert (operands[inside] < users[inside]).all(), graph.name  # HLO lists an operand before its users
        assert _roots(graph)[operands[~inside]].all(), graph.name  # a caller consumes the callee's root


@pytest.mark.parametrize("which", ["tiles", "layout"])
def test_node_splits_start_computations_entry_first(which: str, request: pytest.FixtureRequest) -> None:
    graphs = request.getfixturevalue(which)
    for graph in graphs if isinstance(graphs, list) else [graphs]:
        splits, n = graph.node_splits, len(graph.opcodes)
        assert splits[0] == 0 and (np.diff(splits) > 0).all() and splits[-1] < n
        comp, roots = _computation(graph), np.flatnonzero(_roots(graph))
        assert (np.bincount(comp[roots], minlength=len(splits)) == 1).all(), graph.name
        users, operands = graph.edges.T
        called = {int(v) for u, v in zip(users, operands) if comp[u] != comp[v]}
        assert roots[0] not in operands  # the entry computation's root is the result: nobody consumes it
        assert called == set(roots[1:].tolist()), graph.name  # every other computation is called


def test_error_runs_are_nan_and_agree_with_the_flags(tpu: Path, tiles: list[TensorGraph], layout: TensorGraph) -> None:
    for graph, file in zip([*tiles, layout], [*sorted(tpu.glob("tile_kernel_*.npz")), *tpu.glob("layout_module_*.npz")]):
        with np.load(file, allow_pickle=False) as raw:
            flagged, minus_one = raw["config_error"] == 1, raw["config_runtime"] == -1
        assert (flagged == minus_one).all() and (np.isnan(graph.runtime) == flagged).all(), graph.name
    assert int(np.isnan(tiles[1].runtime).sum()) == 2 and tiles[1].name == "fusion.191"


def test_real_layout(tpu: Path, layout: TensorGraph) -> None:
    row = json.loads((tpu / "summary.json").read_text())["layout"]
    assert (layout.name, layout.program, layout.task) == ("main__.10904", "main__.10904", "layout")
    got = (len(layout.opcodes), len(layout.edges), len(layout.node_splits), len(layout.runtime), int(layout.valid.sum()))
    assert got == (row["nodes"], row["edges"], row["computations"], row["configs"], row["valid"])
    assert (np.nanmin(layout.runtime), np.nanmax(layout.runtime)) == (row["rt_min_ns"], row["rt_max_ns"])
    assert layout.config_feat.shape == (122, 62, 18) and layout.config_feat_names == LAYOUT_CONFIG_NAMES
    # The configurable nodes are the module's convolutions (those with a kernel layout) and reshapes, and no
    # output layout names a dimension the node does not have: the ids were mapped to the right nodes.
    ops, nodes = layout.opcodes[layout.config_nodes], layout.config_nodes
    assert len(set(nodes.tolist())) == 62 and set(ops) == {"convolution", "reshape"}
    assert (ops == "convolution").sum() == (layout.opcodes == "convolution").sum() == 53
    kernel_layout = (layout.config_feat[:, :, 12:] >= 0).any(axis=(0, 2))
    assert (kernel_layout == (ops == "convolution")).all()
    dims = layout.node_feat[nodes][:, [layout.feat_names.index(f"dim_{i}") for i in range(6)]]
    assert (layout.config_feat[:, :, :6].max(axis=(0, 2)) < (dims > 0).sum(axis=1)).all()


def test_real_samples_absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(readers, "data_dir", lambda: None)
    with pytest.raises(UserError, match="shared data folder"):
        real_tpu_tiles()
    monkeypatch.setattr(readers, "data_dir", lambda: tmp_path)
    with pytest.raises(UserError, match="npz_from_pb is not a folder") as caught:
        real_tpu_layout()
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------- synthetic files


def _published_tile() -> dict[str, np.ndarray]:
    """TpuGraphs' tile format: integer opcodes, 140 node features, normalizers, no names."""
    rng = np.random.default_rng(0)
    return {
        "node_feat": rng.random((4, 140), dtype=np.float32),
        "node_opcode": np.array([63, 63, 2, 41], np.uint8),
        "edge_index": np.array([[2, 0], [2, 1], [3, 2]], np.int64),
        "config_feat": rng.random((3, 24), dtype=np.float32),
        "config_runtime": np.array([100, 200, 150], np.int64),
        "config_runtime_normalizers": np.array([120, 120, 120], np.int64),
    }


def _published_layout() -> dict[str, np.ndarray]:
    """TpuGraphs' layout format: per-node configurations, ``node_config_ids``, (1, k) splits ending with n."""
    feat = np.full((3, 2, 18), -1, np.float32)
    feat[1, 0, :2] = [1, 0]
    arrays = {key: value for key, value in _published_tile().items() if not key.startswith("config_")}
    return arrays | {
        "node_config_ids": np.array([1, 3], np.int64),
        "node_config_feat": feat,
        "config_runtime": np.array([900, 910, 905], np.int64),
        "node_splits": np.array([[0, 2, 4]], np.int64),
    }


def _tunelab_tile() -> dict[str, np.ndarray]:
    """Tunelab's own format: the converted files' schema plus program, config names and static counts."""
    return {
        "node_opcode": np.array(["parameter", "parameter", "add"]),
        "node_feat": np.ones((3, 2), np.float32),
        "node_feat_names": np.array(["is_root", "dim_0"]),
        "edge_index": np.array([[2, 0], [2, 1]], np.int32),
        "node_splits": np.array([0], np.int32),
        "config_feat": np.array([[1.0], [8.0]], np.float32),
        "config_feat_names": np.array(["batch_size"]),
        "config_runtime": np.array([5_000, -1], np.int64),
        "config_error": np.array([0, 1], np.int8),
        "config_is_default": np.array([0, 1], np.int8),
        "program": np.array("row_softmax"),
        "graph_flops": np.array(1.5e6),
        "graph_bytes": np.array(4096),
    }


def _write(folder: Path, name: str, arrays: dict[str, np.ndarray]) -> Path:
    path = folder / name
    np.savez(path, **arrays)
    return path


def test_published_tile(tmp_path: Path) -> None:
    graph = read_graph(_write(tmp_path, "alexnet_train_batch_32_1a2b.npz", _published_tile()))
    assert (graph.name, graph.program, graph.task) == ("alexnet_train_batch_32_1a2b",) * 2 + ("tile",)
    assert graph.opcodes.tolist() == ["op63", "op63", "op2", "op41"]
    assert graph.feat_names == tuple(f"f{i:03d}" for i in range(140)) and graph.config_feat_names == TILE_CONFIG_NAMES
    assert graph.edges.dtype == np.int64 and graph.node_splits.tolist() == [0]
    assert graph.relative_runtime() == pytest.approx([100 / 120, 200 / 120, 150 / 120])
    assert graph.default is None and graph.config_nodes is None and graph.extra == {}
    assert read_graph(tmp_path / "alexnet_train_batch_32_1a2b.npz", program="alexnet").program == "alexnet"


def test_published_layout(tmp_path: Path) -> None:
    graph = read_graph(_write(tmp_path, "resnet.npz", _published_layout()))
    assert graph.task == "layout" and graph.config_feat.shape == (3, 2, 18)
    assert graph.config_nodes.tolist() == [1, 3] and graph.node_splits.tolist() == [0, 2]
    assert graph.config_feat_names == LAYOUT_CONFIG_NAMES and graph.normalizer is None
    assert graph.runtime.tolist() == [900.0, 910.0, 905.0]


def test_tunelab_tile(tmp_path: Path) -> None:
    graph = read_graph(_write(tmp_path, "tile_kernel_03_softmax.7.npz", _tunelab_tile()))
    assert (graph.name, graph.program, graph.default) == ("softmax.7", "row_softmax", 1)
    assert graph.feat_names == ("is_root", "dim_0") and graph.config_feat_names == ("batch_size",)
    assert graph.extra == {"graph_flops": 1.5e6, "graph_bytes": 4096.0}
    assert graph.runtime[0] == 5_000 and np.isnan(graph.runtime[1]) and graph.valid.tolist() == [True, False]
    assert graph.passes is None
    passes = np.array([[5_100.0, 5_000.0, np.nan], [np.nan, np.nan, np.nan]])
    timed = read_graph(_write(tmp_path, "timed.npz", _tunelab_tile() | {"config_pass_ns": passes}))
    np.testing.assert_array_equal(timed.passes, passes)
    np.testing.assert_array_equal(timed.with_runs(np.array([0])).passes, passes[:1])  # a configuration split keeps its passes


def test_error_flag_alone_marks_a_failed_run(tmp_path: Path) -> None:
    arrays = _tunelab_tile() | {"config_runtime": np.array([5_000, 7_000], np.int64)}
    assert read_graph(_write(tmp_path, "k.npz", arrays)).valid.tolist() == [True, False]


def test_read_folder_sorts_by_file_name(tmp_path: Path) -> None:
    for name in ["b.npz", "a.npz"]:
        _write(tmp_path, name, _published_tile())
    (tmp_path / "c.txt").write_text("not a graph")
    assert [g.name for g in read_folder(tmp_path)] == ["a", "b"]
    with pytest.raises(UserError, match="no file matches 'tile_\\*.npz'"):
        read_folder(tmp_path, "tile_*.npz")
    with pytest.raises(UserError, match="no such folder"):
        read_folder(tmp_path / "absent")


# ---------------------------------------------------------------- malformed input

_TILE_CASES = [
    ("missing key", lambda a: {k: v for k, v in a.items() if k != "edge_index"}, "missing field 'edge_index'"),
    ("no configuration", lambda a: {k: v for k, v in a.items() if k != "config_feat"}, "'config_feat' (tile) and 'node_config_feat'"),
    ("node_feat shape", lambda a: a | {"node_feat": np.ones((3, 140), np.float32)}, "node_feat has shape (3, 140)"),
    ("node_feat 1-D", lambda a: a | {"node_feat": np.ones(4, np.float32)}, "field 'node_feat' has shape (4,), expected 2 dimensions"),
    ("node_feat text", lambda a: a | {"node_feat": np.full((4, 2), "x")}, "field 'node_feat' holds <U1 values, expected numbers"),
    ("opcode floats", lambda a: a | {"node_opcode": np.ones(4)}, "field 'node_opcode' holds float64 values"),
    ("edge out of range", lambda a: a | {"edge_index": np.array([[2, 0], [2, 9]])}, "field 'edge_index' id 9 is outside the node ids 0..3"),
    ("edge shape", lambda a: a | {"edge_index": np.array([[2, 0, 1]])}, "edge_index has shape (1, 3), expected (edges, 2)"),
    ("edge floats", lambda a: a | {"edge_index": np.array([[2.0, 0.0]])}, "field 'edge_index' holds float64 values, expected integers"),
    ("runtime count", lambda a: a | {"config_runtime": np.array([1, 2])}, "field 'config_feat' has 3 rows for the 2 runs of 'config_runtime'"),
    ("normalizer count", lambda a: a | {"config_runtime_normalizers": np.array([1])}, "'config_runtime_normalizers' has 1 rows for the 3"),
    ("negative runtime", lambda a: a | {"config_runtime": np.array([1, -5, 2])}, "field 'config_runtime' holds -5"),
    ("error flags count", lambda a: a | {"config_error": np.array([0, 1])}, "field 'config_error' has 2 rows"),
    ("default flags count", lambda a: a | {"config_is_default": np.array([1])}, "field 'config_is_default' has 1 rows"),
    ("feature names", lambda a: a | {"node_feat_names": np.array(["a", "b"])}, "field 'node_feat_names' names 2 columns, but the features have 140"),
    ("program array", lambda a: a | {"program": np.array(["a", "b"])}, "field 'program' has shape (2,), expected 0 dimensions"),
    ("splits", lambda a: a | {"node_splits": np.array([0, 3, 2])}, "node_splits must start at 0 and increase"),
    ("both configurations", lambda a: a | {"node_config_feat": np.ones((3, 1, 18))}, "needs exactly one of the fields"),
    ("task", lambda a: a | {"task": np.array("layout")}, "field 'task' is 'layout': a file with 'config_feat' holds the 'tile' or"),
    ("pass count", lambda a: a | {"config_pass_ns": np.ones((2, 2))}, "field 'config_pass_ns' has 2 rows for the 3 runs"),
    ("pass shape", lambda a: a | {"config_pass_ns": np.ones(3)}, "field 'config_pass_ns' has shape (3,), expected 2 dimensions"),
    ("pass value", lambda a: a | {"config_pass_ns": np.array([[1.0, 2.0], [3.0, -4.0], [5.0, np.nan]])},
     "field 'config_pass_ns' holds -4.0 at row 1, pass 2: a pass's runtime is ns > 0, or NaN"),
]
_LAYOUT_CASES = [
    ("config ids missing", lambda a: {k: v for k, v in a.items() if k != "node_config_ids"}, "missing field 'node_config_ids'"),
    ("config id range", lambda a: a | {"node_config_ids": np.array([1, 7])}, "config node id 7 is outside the node ids 0..3"),
    ("config shape", lambda a: a | {"node_config_feat": np.ones((3, 18), np.float32)}, "field 'node_config_feat' has shape (3, 18), expected 3"),
    ("converted ids range", lambda a: {k: v for k, v in a.items() if k != "node_config_ids"} | {"config_index_to_node_id": np.array([0, 4])},
     "field 'config_index_to_node_id' id 4 is outside"),
]


def _one_line_error(path: Path, fragment: str) -> None:
    with pytest.raises(UserError) as caught:
        read_graph(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)) and fragment in message, message


@pytest.mark.parametrize(("case", "change", "fragment"), _TILE_CASES, ids=[c[0] for c in _TILE_CASES])
def test_malformed_tile(tmp_path: Path, case: str, change, fragment: str) -> None:
    _one_line_error(_write(tmp_path, "bad.npz", change(_published_tile())), fragment)


@pytest.mark.parametrize(("case", "change", "fragment"), _LAYOUT_CASES, ids=[c[0] for c in _LAYOUT_CASES])
def test_malformed_layout(tmp_path: Path, case: str, change, fragment: str) -> None:
    _one_line_error(_write(tmp_path, "bad.npz", change(_published_layout())), fragment)


def test_pickled_objects_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npz"
    np.savez(path, **(_published_tile() | {"node_opcode": np.array(["add", 2, None], dtype=object)}))
    _one_line_error(path, "field 'node_opcode' holds pickled Python objects, which are refused")


def test_not_an_npz(tmp_path: Path) -> None:
    text = tmp_path / "notes.npz"
    text.write_text("not numpy\nat all")
    _one_line_error(text, "not an .npz archive")
    single = tmp_path / "single.npy"
    np.save(single, np.ones(3))
    _one_line_error(single, "a single .npy array, not an .npz archive")
    _one_line_error(tmp_path / "absent.npz", "no such file")


def test_corrupt_zip(tmp_path: Path) -> None:
    path = _write(tmp_path, "cut.npz", _published_tile())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _one_line_error(path, "not an .npz archive")
    path = _write(tmp_path, "flipped.npz", _published_tile())
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("node_feat.npy")
    data = bytearray(path.read_bytes())
    data[member.header_offset + 400] ^= 0xFF  # inside node_feat's values: the CRC no longer matches
    path.write_bytes(bytes(data))
    _one_line_error(path, "field 'node_feat' is corrupt")


# ---------------------------------------------------------------- hostile input (issue 29)


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as the bytes of a ``.npy`` file (objects pickled, as numpy would, for the reader to refuse)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=array.dtype.hasobject)
    return buffer.getvalue()


def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    """Only the header of a ``.npy`` file: what a member declares before its values."""
    buffer = io.BytesIO()
    npy_format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@dataclass
class Member:
    """One member of a hand-built zip: its raw (already compressed) bytes and what its directory entry says."""

    name: str
    raw: bytes
    crc: int
    size: int  # the uncompressed size the directory declares, true or not
    method: int = zipfile.ZIP_STORED
    flags: int = 0


def stored(name: str, data: bytes) -> Member:
    return Member(name, data, zlib.crc32(data), len(data))


def deflated(name: str, data: bytes) -> Member:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return Member(name, packer.compress(data) + packer.flush(), zlib.crc32(data), len(data), zipfile.ZIP_DEFLATED)


def zeros_bomb(name: str, header: bytes, zeros: int) -> Member:
    """A deflated member of ``header`` then ``zeros`` zero bytes, built in milliseconds: one fully flushed
    MiB of zeros is a self-contained run of deflate blocks, so it is repeated instead of compressed again."""
    chunk = 2**20
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = packer.compress(header) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(bytes(chunk)) + packer.flush(zlib.Z_FULL_FLUSH)
    tail = packer.compress(bytes(zeros % chunk)) + packer.flush()
    crc = zlib.crc32(header)
    for _ in range(zeros // chunk):
        crc = zlib.crc32(bytes(chunk), crc)
    crc = zlib.crc32(bytes(zeros % chunk), crc)
    return Member(name, head + block * (zeros // chunk) + tail, crc, len(header) + zeros, zipfile.ZIP_DEFLATED)


def raw_zip(members: list[Member]) -> bytes:
    """A zip archive written by hand, so that its directory can say what zipfile would never write."""
    body, directory = bytearray(), bytearray()
    for member in members:
        name = member.name.encode()
        fields = (member.flags, member.method, 0, 0, member.crc, len(member.raw), member.size, len(name))
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, *fields, 0, 0, 0, 0, 0, len(body)) + name
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, *fields, 0) + name + member.raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(body), 0)
    return bytes(body + directory + end)


def _tile_members(**replaced: Member) -> list[Member]:
    """The published tile file's members, stored, with some replaced (or added) by name."""
    members = {f"{key}.npy": stored(f"{key}.npy", npy_bytes(value)) for key, value in _published_tile().items()}
    return list((members | {member.name: member for member in replaced.values()}).values())


def _write_bytes(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


_NON_FINITE_CASES = [
    ("node_feat nan", lambda a: a | {"node_feat": _with(a["node_feat"], (2, 5), np.nan)},
     "field 'node_feat' holds nan at row 2"),
    ("node_feat inf", lambda a: a | {"node_feat": _with(a["node_feat"], (3, 0), -np.inf)},
     "field 'node_feat' holds -inf at row 3"),
    ("node_feat past float32", lambda a: a | {"node_feat": _with(a["node_feat"].astype(np.float64), (1, 0), 1e300)},
     "field 'node_feat' holds 1e+300 at row 1"),
    ("config_feat inf", lambda a: a | {"config_feat": _with(a["config_feat"], (1, 3), np.inf)},
     "field 'config_feat' holds inf at row 1"),
    ("runtime nan", lambda a: a | {"config_runtime": np.array([1.0, np.nan, 2.0])},
     "field 'config_runtime' holds nan at row 1"),
    ("runtime inf", lambda a: a | {"config_runtime": np.array([1.0, 2.0, np.inf])},
     "field 'config_runtime' holds inf at row 2"),
    ("normalizer zero", lambda a: a | {"config_runtime_normalizers": np.array([120, 0, 120])},
     "field 'config_runtime_normalizers' holds 0 at row 1"),
    ("normalizer nan", lambda a: a | {"config_runtime_normalizers": np.array([np.nan, 1.0, 1.0])},
     "field 'config_runtime_normalizers' holds nan at row 0"),
    ("static count inf", lambda a: a | {"graph_flops": np.array(np.inf)}, "field 'graph_flops' holds inf"),
]


def _with(array: np.ndarray, where: tuple[int, ...], value: float) -> np.ndarray:
    changed = array.copy()
    changed[where] = value
    return changed


@pytest.mark.parametrize(("case", "change", "fragment"), _NON_FINITE_CASES, ids=[c[0] for c in _NON_FINITE_CASES])
def test_non_finite_numbers_are_refused_with_their_row(tmp_path: Path, case: str, change, fragment: str) -> None:
    _one_line_error(_write(tmp_path, "bad.npz", change(_published_tile())), fragment)


def test_non_finite_layout_configurations_are_refused(tmp_path: Path) -> None:
    arrays = _published_layout()
    arrays["node_config_feat"][2, 1, 4] = np.nan
    _one_line_error(_write(tmp_path, "bad.npz", arrays), "field 'node_config_feat' holds nan at row 2")


def test_a_decompression_bomb_is_refused_before_inflating(tmp_path: Path) -> None:
    """4 MB on disk, 1 GiB inflated (the issue's file): refused from the sizes the archive declares."""
    gib = 2**30
    bomb = zeros_bomb("node_feat.npy", _npy_header((gib // 4 // 8, 8), "<f4"), gib)
    path = _write_bytes(tmp_path, "bomb.npz", raw_zip(_tile_members(node_feat=bomb)))
    assert path.stat().st_size < 5 * 2**20
    started = time.perf_counter()
    _one_line_error(path, f"bytes inflated, more than the {readers.MAX_NPZ_BYTES:,} a graph file may hold")
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize(("declared", "fragment"), [
    (2**40, "field 'node_feat' makes the arrays hold more than the 268,435,456 bytes a graph file may hold"),
    (2**20, "field 'node_feat' declares shape (1048576,) of float64 (8,388,608 bytes) in a member of 64 bytes"),
])
def test_a_header_that_declares_more_than_the_member_holds_is_refused(tmp_path: Path, declared: int, fragment: str) -> None:
    """A small member whose .npy header claims 2**40 values (8 TiB, which numpy allocated before reading) or 2**20."""
    header = _npy_header((declared,))
    members = _tile_members(node_feat=stored("node_feat.npy", header + bytes(64)))
    path = _write_bytes(tmp_path, "liar.npz", raw_zip(members))
    started = time.perf_counter()
    _one_line_error(path, fragment)
    assert time.perf_counter() - started < 1


def test_a_directory_that_understates_a_member_is_read_no_further(tmp_path: Path) -> None:
    """The directory says 10 values, the deflate stream holds 256 MiB more: reading stops at the declared size."""
    header = _npy_header((10,))
    bomb = zeros_bomb("node_feat.npy", header, 2**28)
    bomb.size, bomb.crc = len(header) + 80, zlib.crc32(header + bytes(80))
    path = _write_bytes(tmp_path, "understated.npz", raw_zip(_tile_members(node_feat=bomb)))
    started = time.perf_counter()
    _one_line_error(path, "field 'node_feat' has shape (10,), expected 2 dimensions")
    assert time.perf_counter() - started < 1


def _crafted(kind: str) -> list[Member]:
    """Archives numpy never writes."""
    opcodes = npy_bytes(np.array([b"add", b"\xff\xfe", b"mul", b"x"]))
    if kind == "not npy":
        return _tile_members(extra=stored("notes.txt", b"hello"))
    if kind == "encrypted":
        member = stored("node_feat.npy", npy_bytes(_published_tile()["node_feat"]))
        member.flags = 1
        return _tile_members(node_feat=member)
    if kind == "bzip2":
        data = npy_bytes(_published_tile()["node_feat"])
        return _tile_members(node_feat=Member("node_feat.npy", bz2.compress(data), zlib.crc32(data), len(data), 12))
    if kind == "corrupt deflate":
        member = deflated("node_feat.npy", npy_bytes(_published_tile()["node_feat"]))
        member.raw = member.raw[:20] + bytes(b ^ 0xFF for b in member.raw[20:40]) + member.raw[40:]
        return _tile_members(node_feat=member)
    if kind == "twice":
        return [*_tile_members(), stored("edge_index.npy", npy_bytes(np.zeros((0, 2), np.int64)))]
    if kind == "too many":
        return _tile_members(**{f"f{i}": stored(f"f{i}.npy", npy_bytes(np.array(i))) for i in range(300)})
    if kind == "deep":
        return _tile_members(deep=stored("deep.npy", npy_bytes(np.zeros((1,) * 40))))
    if kind == "bytes opcodes":
        return _tile_members(node_opcode=stored("node_opcode.npy", opcodes))
    if kind == "not unicode":
        text = npy_bytes(np.array(["add", "mul", "sub", "div"]))
        return _tile_members(node_opcode=stored("node_opcode.npy", text[:-4] + struct.pack("<I", 0x110000)))
    if kind == "negative dimension":
        return _tile_members(node_feat=stored("node_feat.npy", _npy_header((-4, 140)) + bytes(64)))
    raise AssertionError(kind)


_CRAFTED = [
    ("not npy", "field 'notes.txt' is not a .npy array"),
    ("encrypted", "field 'node_feat' is encrypted"),
    ("bzip2", "field 'node_feat' is compressed with zip method 12"),
    ("corrupt deflate", "field 'node_feat' is corrupt"),
    ("twice", "field 'edge_index' appears twice"),
    ("too many", "holds 306 arrays, more than the 256"),
    ("deep", "field 'deep' has 40 dimensions, more than 8"),
    ("bytes opcodes", "field 'node_opcode' holds bytes that are not ASCII text"),
    ("not unicode", "field 'node_opcode' holds U+110000, which is not a character"),
    ("negative dimension", "field 'node_feat' declares shape (-4, 140)"),
]


@pytest.mark.parametrize(("kind", "fragment"), _CRAFTED, ids=[c[0] for c in _CRAFTED])
def test_archives_numpy_never_writes_are_refused(tmp_path: Path, kind: str, fragment: str) -> None:
    _one_line_error(_write_bytes(tmp_path, "crafted.npz", raw_zip(_crafted(kind))), fragment)


def test_the_hand_built_zip_reads_like_numpys(tmp_path: Path) -> None:
    """The helpers above write what np.savez writes, so the refusals are about the change, not the zip."""
    plain = read_graph(_write_bytes(tmp_path, "plain.npz", raw_zip(_tile_members())))
    packed = read_graph(_write_bytes(tmp_path, "packed.npz", raw_zip(
        [deflated(f"{key}.npy", npy_bytes(value)) for key, value in _published_tile().items()])))
    for graph in (plain, packed):
        assert graph.opcodes.tolist() == ["op63", "op63", "op2", "op41"] and graph.node_feat.shape == (4, 140)


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda a: a | {"node_splits": np.array([[0, 2], [3, 4]])}, "field 'node_splits' has shape (2, 2), expected (k,) or (1, k)"),
    (lambda a: a | {"edge_index": np.array([[2, 0], [2, 2**64 - 1]], np.uint64)}, "id 18446744073709551615 is outside"),
    (lambda a: a | {"node_feat": np.ones((4, 140), np.complex64)}, "field 'node_feat' holds complex64 values"),
    (lambda a: a | {"node_feat": np.ones((4, 2), [("a", "<f4"), ("b", "<i4")])}, "field 'node_feat' holds structured values"),
], ids=["splits 2-D", "uint64 edge", "complex features", "structured features"])
def test_odd_dtypes_and_shapes_are_refused(tmp_path: Path, change, fragment: str) -> None:
    _one_line_error(_write(tmp_path, "odd.npz", change(_published_tile())), fragment)
