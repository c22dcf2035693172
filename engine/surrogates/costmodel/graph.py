"""One in-memory graph type for every cost-model data source (costmodel.md §3): TpuGraphs' published tile and
layout ``.npz`` files, the converted real TPU samples of the data folder, and Tunelab's own generated programs.

A graph is one kernel (tile task: one configuration vector per run) or one program (layout task: one
configuration per configurable node and run). Edges follow TpuGraphs: a row ``[u, v]`` means *u consumes v*.
Runtimes are float nanoseconds with NaN for an error run (TpuGraphs writes −1), so a metric can never rank
a failed run as the fastest one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from engine.errors import UserError, brief

TASKS = ("tile", "layout", "absolute")


@dataclass(frozen=True, eq=False)
class TensorGraph:
    """A kernel or program graph with its measured configurations.

    * ``opcodes``: (n,) HLO opcode names (TpuGraphs' integer ids are mapped to names by the reader).
    * ``node_feat``: (n, f) float32, columns named by ``feat_names``.
    * ``edges``: (m, 2) int64, ``[u, v]`` = u consumes v; ``node_splits``: start node of each computation.
    * ``config_feat``: tile/absolute (c, k); layout (c, nc, k) for the nodes ``config_nodes``.
    * ``runtime``: (c,) float ns, NaN for an error run; ``normalizer``: (c,) TpuGraphs' per-run default
      runtime (rank by ``runtime / normalizer``), or None.
    * ``program``: the group a split keeps together (a kernel's program; a program's own name).
    * ``default``: index of the run with the compiler's own configuration (TpuGraphs' ``is_default``), the choice
      a learned ranking has to beat; None when the source does not say.
    * ``passes``: (c, p) float ns, each timing pass's own result for every run (NaN where a pass did not time
      it), when the source kept them: two passes of the same configuration are the data's noise floor.
    """

    name: str
    program: str
    task: str
    opcodes: np.ndarray
    node_feat: np.ndarray
    feat_names: tuple[str, ...]
    edges: np.ndarray
    node_splits: np.ndarray
    config_feat: np.ndarray
    runtime: np.ndarray
    config_feat_names: tuple[str, ...] = ()
    config_nodes: np.ndarray | None = None
    normalizer: np.ndarray | None = None
    extra: dict[str, float] = field(default_factory=dict)
    default: int | None = None
    passes: np.ndarray | None = None

    def __post_init__(self) -> None:
        n, c = len(self.opcodes), len(self.runtime)
        where = f"graph {self.name!r}"
        if self.task not in TASKS:
            raise UserError(f"{where}: task {self.task!r} is not one of {', '.join(TASKS)}")
        if self.node_feat.ndim != 2 or len(self.node_feat) != n:
            raise UserError(f"{where}: node_feat has shape {self.node_feat.shape}, expected ({n}, features)")
        if self.feat_names and len(self.feat_names) != self.node_feat.shape[1]:
            raise UserError(f"{where}: {len(self.feat_names)} feature names for {self.node_feat.shape[1]} columns")
        if self.edges.ndim != 2 or self.edges.shape[1] != 2:
            raise UserError(f"{where}: edge_index has shape {self.edges.shape}, expected (edges, 2)")
        check_node_ids(f"{where}: edge_index", self.edges, n)
        splits = self.node_splits
        if len(splits) and (splits[0] != 0 or (np.diff(splits) <= 0).any() or splits[-1] >= max(n, 1)):
            raise UserError(f"{where}: node_splits must start at 0 and increase strictly below {n}")
        if len(self.config_feat) != c:
            raise UserError(f"{where}: {len(self.config_feat)} configurations for {c} runtimes")
        if self.task == "layout":
            if self.config_nodes is None or self.config_feat.ndim != 3 or self.config_feat.shape[1] != len(self.config_nodes):
                raise UserError(f"{where}: a layout graph needs config_feat (c, nodes, k) for its configurable nodes")
            check_node_ids(f"{where}: config node", self.config_nodes, n)
        elif self.config_feat.ndim != 2:
            raise UserError(f"{where}: config_feat has shape {self.config_feat.shape}, expected (configurations, k)")
        if self.normalizer is not None and len(self.normalizer) != c:
            raise UserError(f"{where}: {len(self.normalizer)} normalizers for {c} runtimes")
        if self.passes is not None and (self.passes.ndim != 2 or len(self.passes) != c):
            raise UserError(f"{where}: passes have shape {self.passes.shape}, expected ({c}, passes)")
        if self.default is not None and not 0 <= self.default < c:
            raise UserError(f"{where}: default configuration {self.default} is not one of the {c} runs")

    @property
    def valid(self) -> np.ndarray:
        """Runs that have a runtime (not an error run)."""
        finished: np.ndarray = np.isfinite(self.runtime) & (self.runtime > 0)
        return finished

    def relative_runtime(self) -> np.ndarray:
        """What configurations of this graph are ranked by: runtime ÷ normalizer when there is one."""
        return self.runtime if self.normalizer is None else self.runtime / self.normalizer

    def with_runs(self, runs: np.ndarray) -> TensorGraph:
        """The same graph with only the configurations ``runs`` (indices, in that order): how the configurations
        of a single program are split when there is no other program to hold out."""
        runs = np.asarray(runs, dtype=np.int64)
        kept = None if self.default is None else np.flatnonzero(runs == self.default)
        return replace(self, config_feat=self.config_feat[runs], runtime=self.runtime[runs],
                       normalizer=None if self.normalizer is None else self.normalizer[runs],
                       passes=None if self.passes is None else self.passes[runs],
                       default=int(kept[0]) if kept is not None and len(kept) else None)


def check_node_ids(what: str, ids: np.ndarray, n: int) -> None:
    """Node ids index the node arrays: one out of range would silently wrap or crash deep inside training."""
    bad = ids[(ids < 0) | (ids >= n)]
    if len(bad):
        raise UserError(f"{what} id {brief(int(bad[0]))} is outside the node ids 0..{n - 1}")
