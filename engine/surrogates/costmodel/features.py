"""Fixed-width features of a (graph, configuration) pair for the tree baseline (costmodel.md §5): a GBDT cannot
read a graph, so the graph is summarised the way AutoTVM/TenSet-style models see a program.

Graph part, the same on every configuration row of a graph:
* bag of opcodes: node count per opcode of the vocabulary fitted on the training graphs, plus an ``<other>``
  column for opcodes never seen in training (a held-out program may use them);
* per opcode, the largest log2(1 + size) of its nodes, for each size column the graphs have (``dim_product``,
  ``dim_sum``): a kernel with a 4096×1000 dot behaves unlike one with a 32×32 dot;
* log2(1 + x) of the node and edge counts and of the static counts ``graph_flops`` / ``graph_bytes`` in ``extra`` (NaN
  where a graph lacks them: the trees route missing values natively).

Configuration part: sign(x)·log2(1 + |x|) of each configuration column (a layout graph's per-node columns are
averaged over its configurable nodes, plus the share of nodes moved off the default layout). Tile graphs with
TpuGraphs' bound columns also get the trip-count and working-set estimates of :func:`tile_estimates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.errors import UserError, brief
from engine.surrogates.costmodel.graph import TensorGraph

SIZE_COLUMNS = ("dim_product", "dim_sum")
EXTRA_KEYS = ("graph_flops", "graph_bytes")
OTHER = "<other>"
BOUND_KINDS = ("kernel", "output", "input")
#: TpuGraphs' tile bound columns, 6 dims of each kind (their sum and product columns are not needed).
BOUND_NAMES = tuple(f"{kind}_bounds_{d}" for kind in BOUND_KINDS for d in range(6))
#: Bytes per element of XLA's PrimitiveType ids (PRED=1 … BF16=16), the ``element_type`` node feature.
ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8, 16: 2, 18: 16, 19: 1, 20: 1}
#: Element size assumed when a graph does not say (f32).
DEFAULT_ELEMENT_BYTES = 4


def signed_log(x: np.ndarray) -> np.ndarray:
    """sign(x)·log2(1 + |x|): sizes span 1–10⁸, and TpuGraphs pads with −1, which must stay apart from 0."""
    logged: np.ndarray = np.sign(x) * np.log2(1.0 + np.abs(x))
    return logged


def check_graphs(graphs: Any, field: str = "graphs") -> list[TensorGraph]:
    """A non-empty sequence of :class:`TensorGraph` of one task, as every baseline's ``fit`` needs."""
    if isinstance(graphs, TensorGraph) or not isinstance(graphs, Sequence) or not len(graphs):
        raise UserError(f"{field} must be a non-empty list of TensorGraph, got {brief(graphs)}")
    odd = [graph for graph in graphs if not isinstance(graph, TensorGraph)]
    if odd:
        raise UserError(f"{field} holds {brief(odd[0])}, not a TensorGraph")
    tasks = sorted({graph.task for graph in graphs})
    if len(tasks) > 1:
        raise UserError(f"{field} mixes the tasks {', '.join(tasks)}; fit one model per task")
    return list(graphs)


def tile_bounds(graph: TensorGraph) -> dict[str, np.ndarray]:
    """The (c, 6) kernel, output and input tile bounds of a tile graph, found by TpuGraphs' column names."""
    if not has_tile_bounds(graph):
        missing = [name for name in BOUND_NAMES if name not in graph.config_feat_names]
        raise UserError(f"graph {graph.name!r}: tile estimates need a tile graph with TpuGraphs' bound columns "
                        f"({'task ' + repr(graph.task) if graph.task != 'tile' else 'no column ' + repr(missing[0])})")
    columns = np.array([graph.config_feat_names.index(name) for name in BOUND_NAMES]).reshape(3, 6)
    return {kind: graph.config_feat[:, columns[i]].astype(np.float64) for i, kind in enumerate(BOUND_KINDS)}


def has_tile_bounds(graph: TensorGraph) -> bool:
    """Whether :func:`tile_estimates` can read the graph."""
    return graph.task == "tile" and set(BOUND_NAMES) <= set(graph.config_feat_names)


def element_bytes(graph: TensorGraph) -> int:
    """The widest element type among the graph's nodes: a tile of it must fit on chip."""
    if "element_type" not in graph.feat_names:
        return DEFAULT_ELEMENT_BYTES
    types = graph.node_feat[:, graph.feat_names.index("element_type")].astype(int)
    return max((ELEMENT_BYTES.get(int(t), 0) for t in types), default=0) or DEFAULT_ELEMENT_BYTES


#: Configuration columns of Tunelab's generated ``lax.map`` chunk programs (generate/programs.py).
CHUNK_COLUMNS = ("batch_size", "chunks", "row_width", "second")


def chunk_estimates(graph: TensorGraph) -> tuple[np.ndarray, np.ndarray] | None:
    """Trip count and working set of a generated ``lax.map`` chunk program, or None for another graph: the loop
    runs ``chunks`` times; one trip holds its ``batch_size`` rows of ``row_width`` and their intermediate of
    ``second`` (keys, hidden units or channels) in f32, a ``splits``-th of it at a time where the joint task splits it."""
    if graph.task != "tile" or not set(CHUNK_COLUMNS) <= set(graph.config_feat_names):
        return None
    batch, chunks, width, second = (graph.config_feat[:, graph.config_feat_names.index(c)].astype(np.float64) for c in CHUNK_COLUMNS)
    if "splits" in graph.config_feat_names:
        second = second / graph.config_feat[:, graph.config_feat_names.index("splits")]
    return chunks, 4.0 * batch * (width + second)


def tile_estimates(graph: TensorGraph) -> tuple[np.ndarray, np.ndarray]:
    """Per configuration, the trip count and the working set in bytes of a tiled loop nest (a generated chunk
    program: :func:`chunk_estimates`).

    * trips = Π over the kernel, output and input dims with a bound b_d > 0 of ⌈E_d / b_d⌉, where the full extent
      E_d is the largest bound any configuration of this graph uses for that dim (an estimate: the bounds are not
      tied to a tensor of the graph, but the candidates usually span the dim), and ⌈·⌉ charges a ragged last tile;
    * working set = element bytes × (Π kernel bounds + Π output bounds + Π input bounds), products over the
      nonzero bounds (a kind without bounds holds nothing). It is in the bounds' units: on the real TPU samples
      the bounds follow a tensor's dims in physical (major-to-minor) order with the two most-minor dims counted
      in 8 × 128 hardware tiles, so there one unit is 1,024 elements' bytes.
    """
    chunked = chunk_estimates(graph)
    if chunked is not None:
        return chunked
    bounds = tile_bounds(graph)
    trips = np.ones(len(graph.runtime))
    tiles = np.zeros(len(graph.runtime))
    for b in bounds.values():
        extent = b.max(axis=0, initial=0.0)
        used = b > 0
        trips *= np.where(used, np.ceil(extent / np.where(used, b, 1.0)), 1.0).prod(axis=1)
        tiles += np.where(used.any(axis=1), np.where(used, b, 1.0).prod(axis=1), 0.0)
    return trips, element_bytes(graph) * tiles


class GraphFeatures:
    """Fixed-width rows for any graph of the task it was fitted on (see the module docstring)."""

    def fit(self, graphs: Sequence[TensorGraph]) -> GraphFeatures:
        """Learn the opcode vocabulary, which size columns and static counts exist, and the configuration width."""
        graphs = check_graphs(graphs)
        widths = sorted({graph.config_feat.shape[-1] for graph in graphs})
        if len(widths) > 1:
            raise UserError(f"graphs have configurations of {' and '.join(map(str, widths))} columns; features need one width")
        self.task_ = graphs[0].task
        self.config_width_ = widths[0]
        self.vocabulary_ = sorted({str(op) for graph in graphs for op in graph.opcodes})
        self.opcode_index_ = {op: i for i, op in enumerate(self.vocabulary_)}
        self.size_columns_ = tuple(name for name in SIZE_COLUMNS if all(name in graph.feat_names for graph in graphs))
        self.extra_keys_ = tuple(key for key in EXTRA_KEYS if any(key in graph.extra for graph in graphs))
        self.tile_estimates_ = all(has_tile_bounds(graph) for graph in graphs)
        self.feature_names_ = self._names(graphs[0])
        return self

    def _names(self, graph: TensorGraph) -> list[str]:
        opcodes = [*self.vocabulary_, OTHER]
        names = [f"count[{op}]" for op in opcodes]
        names += [f"max_log_{column}[{op}]" for column in self.size_columns_ for op in opcodes]
        names += ["log_nodes", "log_edges", *(f"log_{key}" for key in self.extra_keys_)]
        config = list(graph.config_feat_names) or [f"c{i:03d}" for i in range(self.config_width_)]
        names += [f"{'mean_' if self.task_ == 'layout' else ''}log_{name}" for name in config]
        if self.task_ == "layout":
            names.append("non_default_share")
        return names + (["log_trips", "log_working_set"] if self.tile_estimates_ else [])

    def transform(self, graph: TensorGraph) -> np.ndarray:
        """(c, d) rows, one per configuration of ``graph``, error runs included."""
        if not hasattr(self, "vocabulary_"):
            raise UserError("GraphFeatures is not fitted: call fit(graphs) first")
        if graph.task != self.task_ or graph.config_feat.shape[-1] != self.config_width_:
            raise UserError(f"graph {graph.name!r}: a {graph.task} graph with {graph.config_feat.shape[-1]} configuration columns, "
                            f"but the features were fitted on {self.task_} graphs with {self.config_width_}")
        static = self._graph_row(graph)
        rows = np.hstack([np.broadcast_to(static, (len(graph.runtime), len(static))), self._config_rows(graph)])
        return rows.astype(np.float64)

    def _graph_row(self, graph: TensorGraph) -> np.ndarray:
        width = len(self.vocabulary_) + 1
        slot = np.array([self.opcode_index_.get(str(op), width - 1) for op in graph.opcodes], dtype=np.int64)
        parts = [np.bincount(slot, minlength=width).astype(np.float64)]
        for column in self.size_columns_:
            if column not in graph.feat_names:
                raise UserError(f"graph {graph.name!r} lacks the node feature {column!r} the features were fitted with")
            largest = np.zeros(width)
            np.maximum.at(largest, slot, signed_log(graph.node_feat[:, graph.feat_names.index(column)].astype(np.float64)))
            parts.append(largest)
        counts = [len(graph.opcodes), len(graph.edges), *(graph.extra.get(key, np.nan) for key in self.extra_keys_)]
        return np.concatenate([*parts, signed_log(np.array(counts, dtype=np.float64))])

    def _config_rows(self, graph: TensorGraph) -> np.ndarray:
        feat = graph.config_feat.astype(np.float64)
        if self.task_ == "layout":
            moved = (feat != -1).any(axis=2).mean(axis=1, keepdims=True) if feat.shape[1] else np.zeros((len(feat), 1))
            rows = np.hstack([signed_log(feat).mean(axis=1) if feat.shape[1] else np.zeros(feat.shape[::2]), moved])
        else:
            rows = signed_log(feat)
        if self.tile_estimates_:
            trips, working_set = tile_estimates(graph)
            rows = np.hstack([rows, np.log2(trips)[:, None], np.log2(1.0 + working_set)[:, None]])
        return rows
