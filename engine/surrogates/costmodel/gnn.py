"""Kaufman et al.'s learned cost model as a network (costmodel.md §1.2, §2): opcode embedding ‖ scalar node
features → GraphSAGE over both edge directions → column-wise sum/mean/max readout → MLP to one scalar.

A graph's static totals (``graph_flops``, ``graph_bytes`` in ``extra``, XLA's cost analysis) join the pooled
readout: sums over a graph's nodes the network would otherwise have to learn to add up, and on the absolute task the
first thing a runtime scales with (the trees see them too).

``members`` > 1 trains that many networks from different initial weights side by side (:class:`Ensemble`) and
predicts their mean: a deep ensemble, whose members' errors partly cancel.

Configurations join either *early* or *late*:
* early: each (graph, configuration) pair is its own graph in the batch and carries the configuration on its
  nodes. A tile configuration goes to every node; a layout configuration goes to its configurable node only,
  and every other node gets zeros. TpuGraphs' strongest tile baseline does this; it costs one message pass
  per pair;
* late: message passing runs once per graph, and every configuration is joined to the shared pooled embedding.

:class:`Featurizer` encodes a graph once (opcode ids, standardised log features, undirected edges). Its
statistics come from the training graphs alone, so a held-out program is seen through the training set's lens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.surrogates._torch import nn, torch  # before torch_geometric loads torch

# isort: split
from torch_geometric.data import Batch, Data
from torch_geometric.nn import SAGEConv, global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import to_undirected

from engine.surrogates.costmodel.features import EXTRA_KEYS, signed_log
from engine.surrogates.costmodel.graph import TensorGraph

POOLS: dict[str, Callable[..., torch.Tensor]] = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}
JOINS = ("early", "late")
#: ``pool``: the pooled embedding → MLP; ``additive``: every node's own cost, summed (log-sum-exp of per-node log
#: costs), as a program's runtime is the sum of its kernels' (early join only: a node must see the configuration).
READOUTS = ("pool", "additive")
AGGREGATIONS = ("mean", "sum", "max")


@dataclass(frozen=True)
class Standardizer:
    """Per-column mean and spread of sign(x)·log2(1 + |x|) features, as sizes span 1–10⁸ and TpuGraphs pads with −1.
    A constant column keeps a spread of 1; NaN (a graph's unknown total) is left out of the statistics."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, rows: np.ndarray) -> Standardizer:
        logged = signed_log(rows.astype(np.float64))
        known = np.isfinite(logged).sum(axis=0)
        mean = np.where(known > 0, np.nansum(logged, axis=0) / np.maximum(known, 1), 0.0)
        std = np.sqrt(np.nansum((logged - mean) ** 2, axis=0) / np.maximum(known, 1))
        return cls(mean, np.where(std > 1e-6, std, 1.0))

    def __call__(self, rows: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(((signed_log(rows.astype(np.float64)) - self.mean) / self.std).astype(np.float32))


def config_rows(graph: TensorGraph, runs: np.ndarray | slice = slice(None)) -> np.ndarray:
    """The configuration feature rows of ``runs``: (runs, k) for tile/absolute, (runs · nodes, k) for layout."""
    feat = graph.config_feat[runs]
    return feat.reshape(-1, feat.shape[-1])


@dataclass(frozen=True)
class EncodedGraph:
    """A graph as the network reads it.

    ``data``: PyG graph with ``op`` (opcode ids, 0 = unseen), standardised ``x`` and undirected ``edge_index``.
    ``configs``: (c, slots, k) standardised configurations (a tile configuration is one slot).
    ``slots``: (n,) each node's slot, or ``slots`` (one past the last) for a node without a configuration.
    ``totals``: (1, g) the standardised static totals (0, the training mean, where the graph lacks one).
    """

    data: Data
    configs: torch.Tensor
    slots: torch.Tensor
    totals: torch.Tensor

    def node_configs(self, runs: np.ndarray) -> torch.Tensor:
        """Early join's node inputs for ``runs``: (runs · n, k + 1), the last column flags a configured node."""
        picked = self.configs[torch.from_numpy(runs)]
        flagged = torch.cat([picked, torch.ones(*picked.shape[:2], 1)], 2)
        padded = torch.cat([flagged, torch.zeros(len(runs), 1, flagged.shape[2])], 1)
        return padded[:, self.slots].reshape(-1, flagged.shape[2])


@dataclass(frozen=True)
class Featurizer:
    """Opcode vocabulary (index 0 is kept for an opcode never seen in training), feature statistics, and the static
    totals the training graphs carry (``total_keys``, possibly none) with their statistics."""

    vocabulary: tuple[str, ...]
    nodes: Standardizer
    configs: Standardizer
    total_keys: tuple[str, ...] = ()
    totals: Standardizer | None = None

    @classmethod
    def fit(cls, graphs: Sequence[TensorGraph]) -> Featurizer:
        """Statistics of the training graphs; configurations of error runs are left out, as they are of the loss."""
        vocabulary = tuple(sorted({str(op) for g in graphs for op in g.opcodes}))
        nodes = Standardizer.fit(np.concatenate([g.node_feat for g in graphs]))
        keys = tuple(k for k in EXTRA_KEYS if any(np.isfinite(g.extra.get(k, np.nan)) for g in graphs))
        totals = Standardizer.fit(np.array([_totals(g, keys) for g in graphs])) if keys else None
        return cls(vocabulary, nodes, Standardizer.fit(np.concatenate([config_rows(g, g.valid) for g in graphs])), keys, totals)

    def encode(self, graph: TensorGraph) -> EncodedGraph:
        index = {op: i + 1 for i, op in enumerate(self.vocabulary)}
        ops = torch.tensor([index.get(str(op), 0) for op in graph.opcodes], dtype=torch.long)
        n = len(ops)
        edges = to_undirected(torch.from_numpy(graph.edges.astype(np.int64)).t(), num_nodes=n)  # messages both ways
        data = Data(x=self.nodes(graph.node_feat), op=ops, edge_index=edges, num_nodes=n)
        c, k = len(graph.config_feat), graph.config_feat.shape[-1]
        configs = self.configs(config_rows(graph)).reshape(c, -1, k)
        slots = torch.zeros(n, dtype=torch.long)
        if graph.config_nodes is not None:
            slots.fill_(len(graph.config_nodes))
            slots[torch.from_numpy(graph.config_nodes.astype(np.int64))] = torch.arange(len(graph.config_nodes))
        totals = torch.zeros(1, 0) if self.totals is None else torch.nan_to_num(self.totals(_totals(graph, self.total_keys)[None]))
        return EncodedGraph(data, configs, slots, totals)

    def to_state(self) -> dict[str, Any]:
        """Plain lists, so a checkpoint loads with ``torch.load(weights_only=True)``."""
        state = {"vocabulary": list(self.vocabulary), "node_mean": self.nodes.mean.tolist(), "node_std": self.nodes.std.tolist(),
                 "config_mean": self.configs.mean.tolist(), "config_std": self.configs.std.tolist(), "total_keys": list(self.total_keys)}
        if self.totals is not None:
            state |= {"total_mean": self.totals.mean.tolist(), "total_std": self.totals.std.tolist()}
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Featurizer:
        def stats(prefix: str) -> Standardizer:
            return Standardizer(np.array(state[f"{prefix}_mean"]), np.array(state[f"{prefix}_std"]))
        keys = tuple(state.get("total_keys", ()))  # a checkpoint from before totals joined the readout has none
        return cls(tuple(state["vocabulary"]), stats("node"), stats("config"), keys, stats("total") if keys else None)


def _totals(graph: TensorGraph, keys: Sequence[str]) -> np.ndarray:
    """The graph's static totals in ``keys`` order, NaN where it lacks one."""
    return np.array([graph.extra.get(k, np.nan) for k in keys], dtype=np.float64)


@dataclass(frozen=True)
class PairBatch:
    """(graph, configuration) pairs for one forward pass; ``owner`` maps each pair to its graph in ``graphs``."""

    graphs: Batch
    configs: torch.Tensor
    owner: torch.Tensor
    totals: torch.Tensor


def make_batch(encoded: Sequence[EncodedGraph], runs: Sequence[np.ndarray], join: str, device: torch.device) -> PairBatch:
    """Early join repeats a graph once per run; late join keeps one copy and joins ``configs`` after pooling."""
    if join == "early":
        datas = [e.data for e, r in zip(encoded, runs) for _ in range(len(r))]
        configs = torch.cat([e.node_configs(r) for e, r in zip(encoded, runs)])
        owner = torch.arange(len(datas))
    else:
        datas = [e.data for e in encoded]
        configs = torch.cat([e.configs[torch.from_numpy(r), 0] for e, r in zip(encoded, runs)])
        owner = torch.repeat_interleave(torch.arange(len(encoded)), torch.tensor([len(r) for r in runs]))
    totals = torch.cat([e.totals.expand(len(r), -1) for e, r in zip(encoded, runs)])
    return PairBatch(Batch.from_data_list(datas).to(device), configs.to(device), owner.to(device), totals.to(device))


class CostNet(nn.Module):
    """Encoder → residual GraphSAGE layers with LayerNorm → pooled readout (+ late configuration) → MLP head.

    The readout is layer-normalised because sum pooling grows with the graph, and a late configuration is first
    encoded to ``hidden`` units. With neither, a few raw configuration columns beside hundreds of pooled
    ones left late join stuck near its initial loss on the synthetic tile family; with one alone, it depended on the seed.
    """

    def __init__(self, *, opcodes: int, node_features: int, config_features: int, hidden: int, opcode_dim: int,
                 layers: int, aggr: str, join: str, pooling: Sequence[str], totals: int = 0, readout: str = "pool") -> None:
        super().__init__()
        self.join = join
        self.pooling = tuple(pooling)
        early = config_features + 1 if join == "early" else 0
        late = hidden if join == "late" else 0
        self.embed = nn.Embedding(opcodes + 1, opcode_dim, padding_idx=0)
        self.encode = nn.Sequential(nn.Linear(opcode_dim + node_features + early, hidden), nn.ReLU())
        self.convs = nn.ModuleList(SAGEConv(hidden, hidden, aggr=aggr) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.readout_norm = nn.LayerNorm(hidden * len(self.pooling))
        self.config_encode = nn.Sequential(nn.Linear(config_features, hidden), nn.ReLU()) if join == "late" else None
        self.head = nn.Sequential(nn.Linear(hidden * len(self.pooling) + late + totals, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.node_cost = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)) if readout == "additive" else None
        self.total_cost = nn.Linear(totals, 1) if readout == "additive" and totals else None

    def forward(self, pairs: PairBatch) -> torch.Tensor:
        """One scalar per pair: a score (higher = slower) or a standardised log runtime."""
        graphs = pairs.graphs
        parts = [self.embed(graphs.op), graphs.x] + ([pairs.configs] if self.join == "early" else [])
        h = self.encode(torch.cat(parts, 1))
        for conv, norm in zip(self.convs, self.norms):
            h = norm(h + torch.relu(conv(h, graphs.edge_index)))
        if self.node_cost is not None:
            return self._additive(h, pairs)
        pooled = self.readout_norm(torch.cat([POOLS[p](h, graphs.batch, size=graphs.num_graphs) for p in self.pooling], 1))
        pooled = pooled[pairs.owner]
        if self.config_encode is not None:
            pooled = torch.cat([pooled, self.config_encode(pairs.configs)], 1)
        out: torch.Tensor = self.head(torch.cat([pooled, pairs.totals], 1))
        return out.squeeze(1)

    def _additive(self, h: torch.Tensor, pairs: PairBatch) -> torch.Tensor:
        """log Σ_nodes exp(cost of the node), per pair (early join: each pair is one graph of the batch)."""
        assert self.node_cost is not None
        cost = self.node_cost(h)
        batch, count = pairs.graphs.batch, pairs.graphs.num_graphs
        top = global_max_pool(cost, batch, size=count)
        out: torch.Tensor = (top + torch.log(global_add_pool(torch.exp(cost - top[batch]), batch, size=count))).squeeze(1)
        if self.total_cost is not None:
            out = out + self.total_cost(pairs.totals).squeeze(1)
        return out


class Ensemble(nn.Module):
    """Several :class:`CostNet` of different initial weights, trained on the same batches, each on its own loss.
    ``forward`` gives every member's output, (members, pairs); the prediction is their mean."""

    def __init__(self, nets: Sequence[CostNet]) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, pairs: PairBatch) -> torch.Tensor:
        return torch.stack([net(pairs) for net in self.nets])


def member_outputs(out: torch.Tensor) -> torch.Tensor:
    """(members, pairs) from a :class:`CostNet`'s (pairs,) or an :class:`Ensemble`'s (members, pairs)."""
    return out if out.dim() == 2 else out.unsqueeze(0)
