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
   ``config_feat_names``, and 0-d numbers such as ``graph_flops`` / ``graph_bytes``, which land in ``extra``.
   A Tunelab layout file names its configurable nodes with ``node_config_ids``.

Arrays are loaded with ``allow_pickle=False``: an ``.npz`` from elsewhere must not be able to run code. Every
malformed input raises a one-line :class:`UserError` naming the file and the field.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np

from engine.errors import UserError, brief
from engine.io.paths import data_dir
from engine.surrogates.costmodel.graph import TensorGraph, check_node_ids

_BOUNDS = ("0", "1", "2", "3", "4", "5", "sum", "product")
#: TpuGraphs' tile configuration columns: kernel, output and input tile bounds, each 6 dims + sum + product.
TILE_CONFIG_NAMES = tuple(f"{kind}_bounds_{part}" for kind in ("kernel", "output", "input") for part in _BOUNDS)
#: TpuGraphs' layout configuration columns: minor-to-major order of output, input and kernel, −1 = unset.
LAYOUT_CONFIG_NAMES = tuple(f"{tensor}_layout_{dim}" for tensor in ("output", "input", "kernel") for dim in range(6))
ERROR_RUNTIME = -1

_FILE_NAME = re.compile(r"^(?:tile_kernel_\d+_|layout_module_)(?P<name>.+)$")
# (dtype kinds accepted, how a message names them)
_INTS = ("iu", "integers")
_NUMBERS = ("biuf", "numbers")
_FLAGS = ("biu", "0/1 flags")
_TEXT = ("US", "strings")
_OPCODES = ("iuUS", "opcode names or integer ids")


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
    """Every array of the archive, read without pickle."""
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: not an .npz archive ({brief(str(exc))})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UserError(f"{path}: a single .npy array, not an .npz archive of named fields")
    with archive:
        return {key: _member(path, archive, key) for key in archive.files}


def _member(path: Path, archive: np.lib.npyio.NpzFile, key: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise UserError(f"{path}: field {key!r} holds pickled Python objects, which are refused; store numbers or strings") from None
        raise UserError(f"{path}: field {key!r} is corrupt ({brief(str(exc))})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: field {key!r} is corrupt ({brief(str(exc))})") from None


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
    node_feat = _field(arrays, "node_feat", 2, _NUMBERS).astype(np.float32)
    config_feat = _field(arrays, config_key, 3 if layout else 2, _NUMBERS).astype(np.float32)
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
        edges=_field(arrays, "edge_index", 2, _INTS).astype(np.int64),
        node_splits=splits,
        config_feat=config_feat,
        runtime=runtime,
        config_feat_names=_names(arrays, "config_feat_names", config_feat.shape[-1], _config_names(layout, config_feat.shape[-1])),
        config_nodes=_config_nodes(arrays, splits, len(opcodes)) if layout else None,
        normalizer=_normalizer(arrays, len(runtime)),
        extra={key: float(value) for key, value in arrays.items() if value.ndim == 0 and value.dtype.kind in _NUMBERS[0]},
        default=_default(arrays, len(runtime)),
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


def _same_count(key: str, rows: int, runs: int) -> None:
    if rows != runs:
        raise UserError(f"field {key!r} has {rows} rows for the {runs} runs of 'config_runtime'")


def _opcodes(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Opcode names; TpuGraphs' integer ids become ``op<id>`` (see the module docstring)."""
    raw = _field(arrays, "node_opcode", 1, _OPCODES)
    return np.char.add("op", raw.astype(str)) if raw.dtype.kind in "iu" else raw.astype(str)


def _runtime(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Float ns with NaN for a failed run: −1 in the file or a ``config_error`` flag (TpuGraphs drops both)."""
    raw = _field(arrays, "config_runtime", 1, _NUMBERS)
    odd = raw[(raw < 0) & (raw != ERROR_RUNTIME)]
    if len(odd):
        raise UserError(f"field 'config_runtime' holds {brief(odd[0].item())}: a runtime is ns ≥ 0, or {ERROR_RUNTIME} for an error run")
    failed = raw == ERROR_RUNTIME
    if "config_error" in arrays:
        error = _field(arrays, "config_error", 1, _FLAGS)
        _same_count("config_error", len(error), len(raw))
        failed |= error.astype(bool)
    runtime = raw.astype(np.float64)
    runtime[failed] = np.nan
    return runtime


def _normalizer(arrays: dict[str, np.ndarray], runs: int) -> np.ndarray | None:
    if "config_runtime_normalizers" not in arrays:
        return None
    normalizer = _field(arrays, "config_runtime_normalizers", 1, _NUMBERS)
    _same_count("config_runtime_normalizers", len(normalizer), runs)
    return normalizer.astype(np.float64)


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
    task = str(_field(arrays, "task", 0, _TEXT)) if "task" in arrays else "tile"
    if task not in ("tile", "absolute"):
        raise UserError(f"field 'task' is {brief(task)}: a file with 'config_feat' holds the 'tile' or 'absolute' task")
    return task


def _program(arrays: dict[str, np.ndarray]) -> str | None:
    return str(_field(arrays, "program", 0, _TEXT)) if "program" in arrays else None


def _names(arrays: dict[str, np.ndarray], key: str, columns: int, default: tuple[str, ...]) -> tuple[str, ...]:
    """Column names stored in the file, else the format's own."""
    if key not in arrays:
        return default
    names = _field(arrays, key, 1, _TEXT)
    if len(names) != columns:
        raise UserError(f"field {key!r} names {len(names)} columns, but the features have {columns}")
    return tuple(str(name) for name in names)


def _config_names(layout: bool, columns: int) -> tuple[str, ...]:
    known = LAYOUT_CONFIG_NAMES if layout else TILE_CONFIG_NAMES
    return known if columns == len(known) else _generic("c", columns)


def _generic(prefix: str, columns: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i:03d}" for i in range(columns))
