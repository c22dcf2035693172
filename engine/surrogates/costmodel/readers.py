"""Readers that turn every cost-model ``.npz`` flavour into a :class:`TensorGraph` (costmodel.md §3).

All flavours share TpuGraphs' core arrays: ``node_opcode`` (n,), ``node_feat`` (n, f), ``edge_index`` (m, 2) with
``[u, v]`` = *u consumes v*, and ``config_runtime`` (c,) in ns with −1 for an error run (read as NaN). A file holds
``config_feat`` (c, k) when it is a tile/kernel graph, ``node_config_feat`` (c, nc, k) when it is a layout graph.

1. **Converted real TPU samples** (``$DATA/tpugraphs/npz_from_pb``, decoded from tpu_graphs' test protos):
   ``tile_kernel_XX_<kernel>.npz`` and ``layout_module_<program>.npz``. Opcodes are strings, the 24 node features
   are named in ``node_feat_names``, ``node_splits`` starts each computation with the entry computation first,
   ``config_error`` / ``config_is_default`` flag runs (``config_cycles`` is ignored: it is 2 × runtime). Operands
   precede their users inside a computation, but with the entry computation moved first the node order is not
   topological across computations: an entry node comes before the callee root it consumes.
   ``config_index_to_node_id`` is *not* an HLO instruction id nor a position in this file: it is the node's
   position in the proto's own order, where XLA writes the entry computation last. Moving the entry computation
   to the front rotates every position by its size, so the reader rotates the ids back (checked against the raw
   proto: the 62 configurable nodes become the module's 53 convolutions and 9 reshapes).
2. **TpuGraphs as published**: ``node_opcode`` holds integer ids from tpu_graphs'
   ``process_data/xla/hlo_opcode.h``. That table is not shipped with Tunelab, so an id is named ``op<id>``
   (stable, so an opcode embedding still learns it; it just cannot be matched with the converted files' names).
   The 140 node features get the generic names ``f000``…``f139``. Tile files add ``config_runtime_normalizers``
   (rank by runtime ÷ normalizer); layout files add ``node_config_ids`` (positions in the file) and may carry
   ``node_splits``, stored as (1, k) and possibly ending with n, both normalised here. Their nodes follow the
   proto's computation order (entry last) and their splits mark only the computations tpu_graphs' encoder calls
   major (names containing "cluster", "while" or "cond"), not every computation.
3. **Tunelab's own files**: flavour 1's schema, plus optional ``program`` (a 0-d string: the split group),
   ``config_feat_names``, ``config_pass_ns`` (each timing pass's runtime: the noise floor), and 0-d numbers
   such as ``graph_flops`` / ``graph_bytes``, which land in ``extra``.
   A Tunelab layout file names its configurable nodes with ``node_config_ids``.

An ``.npz`` from elsewhere is hostile until read: arrays are read without pickle (a file must not be able to run
code), and sizes are bounded before anything is inflated: the zip directory's declared sizes and each ``.npy``
header's shape and dtype against :data:`MAX_NPZ_BYTES`, then no more bytes than declared (a directory that lies
cannot inflate more). Features and runtimes must be finite. Every malformed input raises a one-line
:class:`UserError` naming the file, the field and, for a bad value, its row.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np
from numpy.lib import format as npy_format

from engine.errors import UserError, brief
from engine.io.paths import data_dir
from engine.surrogates.costmodel.graph import TensorGraph, check_node_ids

_BOUNDS = ("0", "1", "2", "3", "4", "5", "sum", "product")
#: TpuGraphs' tile configuration columns: kernel, output and input tile bounds, each 6 dims + sum + product.
TILE_CONFIG_NAMES = tuple(f"{kind}_bounds_{part}" for kind in ("kernel", "output", "input") for part in _BOUNDS)
#: TpuGraphs' layout configuration columns: minor-to-major order of output, input and kernel, −1 = unset.
LAYOUT_CONFIG_NAMES = tuple(f"{tensor}_layout_{dim}" for tensor in ("output", "input", "kernel") for dim in range(6))
ERROR_RUNTIME = -1

#: Most bytes a graph file may hold, inflated (all arrays together, each value counted at least 8 bytes) and on
#: disk: about 200 times the largest file Tunelab reads today (the real layout program, 1.2 MB inflated; a
#: generated program's files are under 100 kB), so that refusing a decompression bomb costs no more.
MAX_NPZ_BYTES = 256 * 2**20
#: Most arrays in one file: 8 times the 32 of a generated file.
MAX_NPZ_ARRAYS = 256
#: Most dimensions of one array (the format's deepest is 3, a layout file's per-node configurations).
MAX_NDIM = 8
_NPY_HEADERS = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}
#: Zip methods numpy writes (stored, deflate). zipfile inflates bzip2 and lzma without an output bound per read,
#: so a few kB of either could still inflate to gigabytes in one call.
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_ENCRYPTED = 0x1  # zipfile asks for a password (RuntimeError); the flags it cannot read raise NotImplementedError
#: dtype kinds an array may have: booleans, numbers, text (no objects, no structures, no dates).
_STORED_KINDS = "biufcUS"
_CHUNK = 2**20
#: What zipfile raises on a damaged archive: besides BadZipFile, NotImplementedError (a zip version or flag it does
#: not read), UnicodeDecodeError (a name flagged UTF-8 that is not), EOFError and OSError (cut short).
_ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, UnicodeDecodeError, EOFError, OSError)

_FILE_NAME = re.compile(r"^(?:tile_kernel_\d+_|layout_module_)(?P<name>.+)$")
# (dtype kinds accepted, how a message names them)
_INTS = ("iu", "integers")
_NUMBERS = ("biuf", "numbers")
_FLAGS = ("biu", "0/1 flags")
_TEXT = ("US", "strings")
_OPCODES = ("iuUS", "opcode names or integer ids")


#: Node feature widths of the schemas Tunelab reads, and whose they are.
KNOWN_NODE_WIDTHS = {24: "the converted TPU samples", 48: "Tunelab's generated files", 140: "TpuGraphs as published"}


def schema_note(graphs: Sequence[TensorGraph]) -> str | None:
    """One line on graphs whose files name none of their feature columns: their widths, whether any known schema
    has them, and the generic names the columns were read under. The models learn such columns all the same, but
    nothing checks that they mean what a known schema's columns mean, and a user should know that. None when every
    column is named."""
    unnamed = [g for g in graphs if g.feat_names == _generic("f", g.node_feat.shape[1])
               or g.config_feat_names == _generic("c", g.config_feat.shape[-1])]
    if not unnamed:
        return None
    nodes = sorted({g.node_feat.shape[1] for g in unnamed})
    configs = sorted({g.config_feat.shape[-1] for g in unnamed})
    known = [KNOWN_NODE_WIDTHS[w] for w in nodes if w in KNOWN_NODE_WIDTHS]
    whose = (f"the width of {', '.join(known)}" if len(known) == len(nodes) else
             "no schema Tunelab knows: " + ", ".join(f"{w} in {who}" for w, who in KNOWN_NODE_WIDTHS.items()))
    return (f"{len(unnamed)} of {len(graphs)} graphs carry no feature names: {_widths(nodes)} node features ({whose}) and "
            f"{_widths(configs)} configuration columns, read as f000… and c000…; models use them as unnamed columns")


def _widths(widths: list[int]) -> str:
    return " or ".join(str(w) for w in widths)


def read_graph(path: str | Path, *, program: str | None = None) -> TensorGraph:
    """One kernel or program graph from any flavour; ``program`` overrides the split group stored in the file."""
    path = Path(path)
    arrays = _load(path)
    try:
        return _graph(arrays, _name(path), program)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None


def read_folder(path: str | Path, pattern: str = "*.npz") -> list[TensorGraph]:
    """Every matching file, in file-name order so that runs and splits are reproducible."""
    folder = Path(path)
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder")
    files = sorted(folder.glob(pattern), key=lambda file: file.name)
    if not files:
        raise UserError(f"{folder}: no file matches {pattern!r}")
    return [read_graph(file) for file in files]


def real_tpu_tiles() -> list[TensorGraph]:
    """The 15 real TPU v3 kernels with their 754 tile runs (752 valid): Kaufman's tile task on real data."""
    return read_folder(_real_tpu_folder(), "tile_kernel_*.npz")


def real_tpu_layout() -> TensorGraph:
    """The one real layout program, ``main__.10904``: 3,163 nodes, 122 layout runs over 62 configurable nodes."""
    folder = _real_tpu_folder()
    files = sorted(folder.glob("layout_module_*.npz"))
    if len(files) != 1:
        raise UserError(f"{folder}: expected one layout_module_*.npz, found {len(files)}")
    return read_graph(files[0])


def _real_tpu_folder() -> Path:
    data = data_dir()
    if data is None:
        raise UserError("the real TPU samples need the shared data folder ($TUNELAB_DATA, else ../shared/data), which is absent")
    folder = data / "tpugraphs" / "npz_from_pb"
    if not folder.is_dir():
        raise UserError(f"the real TPU samples are absent: {folder} is not a folder")
    return folder


def _load(path: Path) -> dict[str, np.ndarray]:
    """Every array of the archive, read without pickle and bounded before anything is inflated: the zip
    directory's sizes first, then each member's ``.npy`` header against its size, then at most that many bytes."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(npy_format.MAGIC_PREFIX)) == npy_format.MAGIC_PREFIX:
                raise UserError(f"{path}: a single .npy array, not an .npz archive of named fields")
            if handle.seek(0, io.SEEK_END) > MAX_NPZ_BYTES:
                raise UserError(f"{path}: more than {MAX_NPZ_BYTES:,} bytes, the most a graph file may hold")
            with zipfile.ZipFile(handle) as archive:
                members = _members(path, archive.infolist())
                budget = _Budget()
                return {key: _array(archive, info, f"{path}: field {brief(key)}", budget) for key, info in members.items()}
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except _ZIP_ERRORS as exc:
        raise UserError(f"{path}: not an .npz archive ({brief(str(exc))})") from None


def _members(path: Path, infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by field name, refused on what its directory declares, before any is opened."""
    if len(infos) > MAX_NPZ_ARRAYS:
        raise UserError(f"{path}: holds {len(infos):,} arrays, more than the {MAX_NPZ_ARRAYS} a graph file may hold")
    declared = sum(info.file_size for info in infos)
    if declared > MAX_NPZ_BYTES:
        raise UserError(f"{path}: declares {declared:,} bytes inflated, more than the {MAX_NPZ_BYTES:,} a graph file may hold")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        key = info.filename.removesuffix(".npy")
        what = f"{path}: field {brief(key)}"
        if key in members:
            raise UserError(f"{what} appears twice in the archive")
        if info.flag_bits & _ENCRYPTED:
            raise UserError(f"{what} is encrypted; a graph file is a plain numpy archive")
        if info.compress_type not in _METHODS:
            raise UserError(f"{what} is compressed with zip method {info.compress_type}; numpy writes stored or deflated arrays")
        members[key] = info
    return members


class _Budget:
    """Values the arrays of one file may hold together, each counted at least 8 bytes (what the reader widens
    a flag or an opcode id to), so that a file of 1-byte values cannot make the reader build gigabytes."""

    def __init__(self) -> None:
        self.left = MAX_NPZ_BYTES

    def spend(self, what: str, count: int, itemsize: int) -> None:
        self.left -= count * max(itemsize, 8)
        if self.left < 0:
            raise UserError(f"{what} makes the arrays hold more than the {MAX_NPZ_BYTES:,} bytes a graph file may hold")


def _array(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str, budget: _Budget) -> np.ndarray:
    """One member: its ``.npy`` header checked against the member's declared size, then exactly that many
    bytes read (zipfile stops inflating there and checks the CRC), so a directory that lies cannot inflate more."""
    try:
        with archive.open(info) as handle:
            shape, fortran, dtype = _header(handle, what)
            count = math.prod(shape)
            budget.spend(what, count, dtype.itemsize)
            size = count * dtype.itemsize
            if handle.tell() + size != info.file_size:
                raise UserError(f"{what} declares shape {shape} of {dtype} ({size:,} bytes) in a member of "
                                f"{info.file_size - handle.tell():,} bytes")
            data = bytearray(size)
            done = 0
            while done < size:
                chunk = handle.read(min(_CHUNK, size - done))
                if not chunk:
                    raise UserError(f"{what} is cut short ({done:,} of {size:,} bytes)")
                data[done:done + len(chunk)] = chunk
                done += len(chunk)
    except (*_ZIP_ERRORS, zlib.error) as exc:
        raise UserError(f"{what} is corrupt ({brief(str(exc))})") from None
    if dtype.kind == "U":
        _check_characters(what, data, dtype)
    values = np.frombuffer(data, dtype, count)
    return values.reshape(shape[::-1]).T if fortran else values.reshape(shape)


def _header(handle: IO[bytes], what: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, order and dtype from a ``.npy`` header, without reading a value; only plain numbers and text."""
    try:
        version = npy_format.read_magic(handle)
        read = _NPY_HEADERS.get(version)
        header = read(handle) if read else None
    except ValueError as exc:  # no magic, or a header cut short or not a literal dict of the three keys
        raise UserError(f"{what} is not a .npy array ({brief(' '.join(str(exc).split()))})") from None
    if header is None:
        raise UserError(f"{what} is a .npy file of format version {version}, which numpy does not write for plain arrays")
    shape, fortran, dtype = header
    if dtype.hasobject:
        raise UserError(f"{what} holds pickled Python objects, which are refused; store numbers or strings")
    if dtype.names is not None or dtype.subdtype is not None:
        raise UserError(f"{what} holds structured values ({brief(str(dtype))}); store one array per field")
    if dtype.kind not in _STORED_KINDS or dtype.itemsize == 0:
        raise UserError(f"{what} holds {dtype} values; a graph file holds numbers and text")
    if len(shape) > MAX_NDIM:
        raise UserError(f"{what} has {len(shape)} dimensions, more than {MAX_NDIM}")
    if any(dim < 0 for dim in shape):
        raise UserError(f"{what} declares shape {brief(shape)}: a dimension is negative")
    return tuple(int(dim) for dim in shape), fortran, dtype


def _check_characters(what: str, data: bytearray, dtype: np.dtype) -> None:
    """numpy stores text as UCS-4 code points and turns any of them into a ``str``, characters or not; a
    code point past U+10FFFF or a lone surrogate would fail later, when the name is printed or stored."""
    codes = np.frombuffer(data, np.dtype(np.uint32).newbyteorder(dtype.byteorder))
    bad = codes[(codes > 0x10FFFF) | ((codes >= 0xD800) & (codes <= 0xDFFF))]
    if len(bad):
        raise UserError(f"{what} holds U+{int(bad[0]):04X}, which is not a character")


def _name(path: Path) -> str:
    """The kernel or program name: the converted files prefix it with ``tile_kernel_XX_`` / ``layout_module_``."""
    match = _FILE_NAME.match(path.stem)
    return match["name"] if match else path.stem


def _graph(arrays: dict[str, np.ndarray], name: str, program: str | None) -> TensorGraph:
    layout = "node_config_feat" in arrays
    if layout == ("config_feat" in arrays):
        raise UserError("needs exactly one of the fields 'config_feat' (tile) and 'node_config_feat' (layout)")
    config_key = "node_config_feat" if layout else "config_feat"
    opcodes = _opcodes(arrays)
    node_feat = _features(arrays, "node_feat", 2)
    config_feat = _features(arrays, config_key, 3 if layout else 2)
    runtime = _runtime(arrays)
    _same_count(config_key, len(config_feat), len(runtime))
    splits = _splits(arrays, len(opcodes))
    return TensorGraph(
        name=name,
        program=program or _program(arrays) or name,
        task="layout" if layout else _task(arrays),
        opcodes=opcodes,
        node_feat=node_feat,
        feat_names=_names(arrays, "node_feat_names", node_feat.shape[1], _generic("f", node_feat.shape[1])),
        edges=_edges(arrays, len(opcodes)),
        node_splits=splits,
        config_feat=config_feat,
        runtime=runtime,
        config_feat_names=_names(arrays, "config_feat_names", config_feat.shape[-1], _config_names(layout, config_feat.shape[-1])),
        config_nodes=_config_nodes(arrays, splits, len(opcodes)) if layout else None,
        normalizer=_normalizer(arrays, len(runtime)),
        extra=_extra(arrays),
        default=_default(arrays, len(runtime)),
        passes=_passes(arrays, len(runtime)),
    )


def _field(arrays: dict[str, np.ndarray], key: str, ndim: int, kinds: tuple[str, str]) -> np.ndarray:
    """A required array with the dimensions and kind of values the format promises."""
    if key not in arrays:
        raise UserError(f"missing field {key!r}")
    value = arrays[key]
    if value.ndim != ndim:
        raise UserError(f"field {key!r} has shape {value.shape}, expected {ndim} dimension{'s' * (ndim != 1)}")
    if value.dtype.kind not in kinds[0]:
        raise UserError(f"field {key!r} holds {value.dtype} values, expected {kinds[1]}")
    return value


def _features(arrays: dict[str, np.ndarray], key: str, ndim: int) -> np.ndarray:
    """Float32 features, every one finite: a NaN or an infinity (or a float64 past float32's range) would
    silently poison every prediction made from the graph."""
    with np.errstate(over="ignore"):  # a float64 past float32's range becomes inf, refused below
        features = _field(arrays, key, ndim, _NUMBERS).astype(np.float32)
    bad = ~np.isfinite(features)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), bad.shape)
        value = arrays[key][where].item()
        raise UserError(f"field {key!r} holds {brief(value)} at row {where[0]}: features are finite float32 numbers")
    return features


def _edges(arrays: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Edges as int64, node ids checked before the conversion (a uint64 past 2**63 would wrap to a negative)."""
    edges = _field(arrays, "edge_index", 2, _INTS)
    check_node_ids("field 'edge_index'", edges, n)
    return edges.astype(np.int64)


def _extra(arrays: dict[str, np.ndarray]) -> dict[str, float]:
    """0-d numbers such as the static counts; NaN reads as unknown (as a missing count does), ±inf is refused."""
    extra = {key: float(value) for key, value in arrays.items() if value.ndim == 0 and value.dtype.kind in _NUMBERS[0]}
    for key, value in extra.items():
        if math.isinf(value):
            raise UserError(f"field {key!r} holds {value}: a count is finite, or NaN when unknown")
    return extra


def _text(arrays: dict[str, np.ndarray], key: str, ndim: int, kinds: tuple[str, str] = _TEXT) -> np.ndarray:
    """A text field as ``str`` values; numpy decodes stored bytes as ASCII."""
    try:
        return _field(arrays, key, ndim, kinds).astype(str)
    except UnicodeDecodeError:
        raise UserError(f"field {key!r} holds bytes that are not ASCII text") from None


def _same_count(key: str, rows: int, runs: int) -> None:
    if rows != runs:
        raise UserError(f"field {key!r} has {rows} rows for the {runs} runs of 'config_runtime'")


def _opcodes(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Opcode names; TpuGraphs' integer ids become ``op<id>`` (see the module docstring)."""
    raw = _field(arrays, "node_opcode", 1, _OPCODES)
    if raw.dtype.kind not in "iu":
        return _text(arrays, "node_opcode", 1, _OPCODES)
    # One name per distinct id, as wide as the longest: np.char.add would make every name 'op' + 20 characters
    # (an int64's widest), 92 bytes a node.
    ids, nodes = np.unique(raw, return_inverse=True)
    names: np.ndarray = np.array([f"op{i}" for i in ids.tolist()], dtype=str)[nodes]
    return names


def _runtime(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Float ns with NaN for a failed run: −1 in the file or a ``config_error`` flag (TpuGraphs drops both)."""
    raw = _field(arrays, "config_runtime", 1, _NUMBERS)
    _check_runs("config_runtime", raw, ((raw < 0) & (raw != ERROR_RUNTIME)) | ~np.isfinite(raw),
                f"a runtime is ns ≥ 0, or {ERROR_RUNTIME} for an error run")
    failed = raw == ERROR_RUNTIME
    if "config_error" in arrays:
        error = _field(arrays, "config_error", 1, _FLAGS)
        _same_count("config_error", len(error), len(raw))
        failed |= error.astype(bool)
    runtime = raw.astype(np.float64)
    runtime[failed] = np.nan
    return runtime


def _check_runs(key: str, values: np.ndarray, bad: np.ndarray, rule: str) -> None:
    """Refuse the first run flagged ``bad``, naming its row and value."""
    if bad.any():
        row = int(np.argmax(bad))
        raise UserError(f"field {key!r} holds {brief(values[row].item())} at row {row}: {rule}")


def _normalizer(arrays: dict[str, np.ndarray], runs: int) -> np.ndarray | None:
    if "config_runtime_normalizers" not in arrays:
        return None
    normalizer = _field(arrays, "config_runtime_normalizers", 1, _NUMBERS)
    _same_count("config_runtime_normalizers", len(normalizer), runs)
    _check_runs("config_runtime_normalizers", normalizer, ~(normalizer > 0) | ~np.isfinite(normalizer),
                "a normalizer is a runtime > 0 that runs are divided by")
    return normalizer.astype(np.float64)


def _passes(arrays: dict[str, np.ndarray], runs: int) -> np.ndarray | None:
    """Each timing pass's runtime of every run (Tunelab's generator keeps them), NaN where a pass did not run."""
    if "config_pass_ns" not in arrays:
        return None
    passes = _field(arrays, "config_pass_ns", 2, _NUMBERS).astype(np.float64)
    _same_count("config_pass_ns", len(passes), runs)
    bad = np.argwhere(~(np.isnan(passes) | ((passes > 0) & np.isfinite(passes))))
    if len(bad):
        row, column = (int(i) for i in bad[0])
        raise UserError(f"field 'config_pass_ns' holds {brief(passes[row, column].item())} at row {row}, pass {column + 1}: "
                        "a pass's runtime is ns > 0, or NaN where the pass did not time the run")
    return passes


def _default(arrays: dict[str, np.ndarray], runs: int) -> int | None:
    """The first run flagged ``config_is_default`` (as TpuGraphs' own iterator picks it), or None."""
    if "config_is_default" not in arrays:
        return None
    flags = _field(arrays, "config_is_default", 1, _FLAGS)
    _same_count("config_is_default", len(flags), runs)
    hits = np.flatnonzero(flags)
    return int(hits[0]) if len(hits) else None


def _splits(arrays: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Start of each computation; a file without them is one computation. TpuGraphs' (1, k) form, which may end
    with n (the end of the last computation), is flattened and trimmed."""
    if "node_splits" not in arrays:
        return np.zeros(min(n, 1), np.int64)
    raw = arrays["node_splits"]
    if raw.ndim == 2 and len(raw) != 1:
        raise UserError(f"field 'node_splits' has shape {raw.shape}, expected (k,) or (1, k)")
    splits = _field(arrays, "node_splits", 2 if raw.ndim == 2 else 1, _INTS).ravel().astype(np.int64)
    return splits[:-1] if len(splits) > 1 and splits[-1] == n else splits


def _config_nodes(arrays: dict[str, np.ndarray], splits: np.ndarray, n: int) -> np.ndarray:
    """Node ids of the configurable nodes, as positions in this file (the converted files' proto-order ids are
    rotated, see the module docstring)."""
    if "node_config_ids" in arrays or "config_index_to_node_id" not in arrays:
        return _field(arrays, "node_config_ids", 1, _INTS).astype(np.int64)
    proto_order = _field(arrays, "config_index_to_node_id", 1, _INTS).astype(np.int64)
    check_node_ids("field 'config_index_to_node_id'", proto_order, n)
    entry = splits[1] if len(splits) > 1 else n
    return (proto_order + entry) % n


def _task(arrays: dict[str, np.ndarray]) -> str:
    """A file with one configuration vector per run: ``tile`` unless it says ``absolute`` (Tunelab's generator)."""
    task = str(_text(arrays, "task", 0)) if "task" in arrays else "tile"
    if task not in ("tile", "absolute"):
        raise UserError(f"field 'task' is {brief(task)}: a file with 'config_feat' holds the 'tile' or 'absolute' task")
    return task


def _program(arrays: dict[str, np.ndarray]) -> str | None:
    return str(_text(arrays, "program", 0)) if "program" in arrays else None


def _names(arrays: dict[str, np.ndarray], key: str, columns: int, default: tuple[str, ...]) -> tuple[str, ...]:
    """Column names stored in the file, else the format's own."""
    if key not in arrays:
        return default
    names = _text(arrays, key, 1)
    if len(names) != columns:
        raise UserError(f"field {key!r} names {len(names)} columns, but the features have {columns}")
    return tuple(str(name) for name in names)


def _config_names(layout: bool, columns: int) -> tuple[str, ...]:
    known = LAYOUT_CONFIG_NAMES if layout else TILE_CONFIG_NAMES
    return known if columns == len(known) else _generic("c", columns)


def _generic(prefix: str, columns: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i:03d}" for i in range(columns))
