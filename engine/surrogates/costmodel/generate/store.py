"""One generated graph as an ``.npz`` in Tunelab's own schema (readers.py, flavour 3), written atomically so that an
interrupted run never leaves a half file that a resumed run would take as done.

Besides what :func:`~engine.surrogates.costmodel.readers.read_graph` reads (node arrays, ``config_feat`` with its
names, ``config_runtime`` in ns with −1 for an error run, ``config_is_default``, ``config_error``, ``program`` and
0-d numbers such as ``graph_flops`` that land in ``extra``), a file keeps the raw measurements and their context,
which the reader ignores: every repeat (``config_repeats_ns``), the pass minima, calls per batch, the load average
of each pass, the small-kernel and unstable flags, and the versions, flags and CPU model of the run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.errors import UserError
from engine.surrogates.costmodel.generate.protocol import Protocol, Timings, disagreeing, kept_runtime
from engine.surrogates.costmodel.hlo import HloGraph


@dataclass(frozen=True)
class Sample:
    """One graph file's content: the graph, its configurations' rows and what was measured for them."""

    graph: HloGraph
    program: str
    task: str
    columns: tuple[str, ...]
    config_feat: np.ndarray
    timings: Timings
    default: int
    extra: Mapping[str, float]
    meta: Mapping[str, str]


def sample_path(folder: Path, stem: str) -> Path:
    return folder / f"{stem}.npz"


def sample_arrays(sample: Sample, protocol: Protocol) -> dict[str, np.ndarray]:
    """The named arrays of the file (see the module docstring)."""
    graph, timings = sample.graph, sample.timings
    minima = timings.minima()
    runtime = kept_runtime(minima)
    count = len(runtime)
    if sample.config_feat.shape != (count, len(sample.columns)) or not 0 <= sample.default < count:
        raise UserError(f"sample {sample.program}: {sample.config_feat.shape} configuration rows for {count} runs and "
                        f"{len(sample.columns)} columns, default {sample.default}")
    arrays = {
        "node_opcode": np.asarray(graph.opcodes, dtype=str),
        "node_feat": graph.node_feat.astype(np.float32),
        "node_feat_names": np.array(graph.feat_names, dtype=str),
        "edge_index": graph.edges.astype(np.int32),
        "node_splits": graph.node_splits.astype(np.int32),
        "config_feat": sample.config_feat.astype(np.float32),
        "config_feat_names": np.array(sample.columns, dtype=str),
        "config_runtime": runtime,
        "config_is_default": (np.arange(count) == sample.default).astype(np.int8),
        "config_error": (runtime < 0).astype(np.int8),
        "config_small": ((runtime >= 0) & (runtime < protocol.small_s * 1e9)).astype(np.int8),
        "config_unstable": disagreeing(minima, protocol.tolerance).astype(np.int8),
        "config_calls": timings.calls.astype(np.int64),
        "config_pass_ns": minima,
        "config_repeats_ns": timings.repeats_ns,
        "config_loadavg": timings.load.astype(np.float32),
        "program": np.array(sample.program),
        "task": np.array(sample.task),
        "kernels": np.array(float(graph.kernels)),
    }
    arrays.update({key: np.array(float(value)) for key, value in sample.extra.items()})
    arrays.update({key: np.array(str(value)) for key, value in sample.meta.items()})
    return arrays


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Compressed ``.npz`` via a temporary file in the same folder and one rename: readers see all or nothing."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def missing(folder: Path, stems: Sequence[str]) -> bool:
    """Whether any of a program's files is absent: a program counts as done only with all of them."""
    return not all(sample_path(folder, stem).is_file() for stem in stems)
