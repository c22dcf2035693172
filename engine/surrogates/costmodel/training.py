"""Fitting the GNN cost model of :mod:`engine.surrogates.costmodel.gnn` (costmodel.md §1.3, §2), scikit-learn style.

* Tile and layout graphs train a ranking score (higher = slower) over the configurations of the *same* graph,
  with a pairwise hinge or logistic loss, or ListMLE. Runtimes of different graphs never meet in a loss.
* Absolute graphs train the log runtime with MSE. The log runtime is standardised with training statistics,
  so the head's output stays O(1).
* Error runs (NaN runtime) are never sampled. They enter no loss, and no statistic either.

Each step takes ``graphs_per_step`` graphs and up to ``configs_per_graph`` valid configurations of each. With
``members`` > 1, every member of the ensemble takes the step on its own loss; validation and prediction use their mean.
Early stopping keeps the weights of the best validation epoch: mean Kendall τ, or MAPE for absolute runtimes.
"""

from __future__ import annotations

import math
import pickle
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engine.errors import UserError, brief
from engine.surrogates._torch import F, available_cpus, threads, torch
from engine.surrogates.costmodel.features import check_graphs
from engine.surrogates.costmodel.gnn import (
    AGGREGATIONS,
    JOINS,
    POOLS,
    READOUTS,
    CostNet,
    EncodedGraph,
    Ensemble,
    Featurizer,
    make_batch,
    member_outputs,
)
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import ape, kendall_tau

RANKING_LOSSES = ("hinge", "logistic", "listmle")
LOSSES = ("auto", *RANKING_LOSSES, "mse")
FORMAT = "tunelab-costmodel-gnn/1"
#: Nodes per forward pass at prediction time: early join repeats the graph once per configuration.
PREDICT_NODES = 200_000
#: Nodes of one training step per torch thread (``threads=None`` sizes to it). bench/costmodel_threads.py, AMD Zen 3,
#: 2 CPUs: a second thread ran steps of 3,700 and 6,400 nodes 0.81× and 0.90× as fast, of 12,800 nodes 1.19×,
#: of 51,000 nodes 1.90×.
NODES_PER_THREAD = 6_000

_INTEGERS = {"hidden": 1, "layers": 1, "opcode_dim": 1, "configs_per_graph": 2, "graphs_per_step": 1, "epochs": 1, "patience": 1,
             "seed": 0, "members": 1}
#: Integer parameters that may also be None (chosen by the model).
_OPTIONAL_INTEGERS = {"threads": 1}
_CHOICES = {"join": JOINS, "aggr": AGGREGATIONS, "loss": LOSSES, "readout": READOUTS}

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _finite(scores: torch.Tensor, runtimes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop error runs: a NaN runtime must neither win nor lose a comparison."""
    keep = torch.isfinite(runtimes) & (runtimes > 0)
    return scores[keep], runtimes[keep]


def pairwise_loss(scores: torch.Tensor, runtimes: torch.Tensor, kind: str = "hinge", weighted: bool = False) -> torch.Tensor:
    """Mean over pairs where run i is faster than run j (z = s_j − s_i) of hinge max(0, 1 − z) or logistic log(1 + e^−z).

    ``weighted`` weights a pair by |log t_i − log t_j|, so near-ties, which are mostly noise, count less.
    """
    if kind not in ("hinge", "logistic"):
        raise UserError(f"kind={brief(kind)}: expected hinge or logistic")
    s, t = _finite(scores, runtimes)
    faster = t[:, None] < t[None, :]
    z = (s[None, :] - s[:, None])[faster]
    if not len(z):
        return scores.sum() * 0.0
    per_pair = torch.relu(1.0 - z) if kind == "hinge" else F.softplus(-z)
    if not weighted:
        return per_pair.mean()
    weight = (torch.log(t)[None, :] - torch.log(t)[:, None])[faster]
    return (weight * per_pair).sum() / weight.sum()


def listmle_loss(scores: torch.Tensor, runtimes: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood (per position) of the true fastest-first order under a Plackett–Luce model of −score."""
    s, t = _finite(scores, runtimes)
    if not len(s):
        return scores.sum() * 0.0
    utility = -s[torch.argsort(t, stable=True)]
    return (torch.logcumsumexp(utility.flip(0), 0).flip(0) - utility).mean()


def check_params(params: dict[str, Any]) -> None:
    """Refuse a bad hyper-parameter with a one-line message naming it."""
    for name, low in (_INTEGERS | _OPTIONAL_INTEGERS).items():
        value = params[name]
        if value is None and name in _OPTIONAL_INTEGERS:
            continue
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise UserError(f"{name}={brief(value)}: expected an integer ≥ {low}{' or None' * (name in _OPTIONAL_INTEGERS)}")
    if params["seed"] >= 2**32:
        raise UserError(f"seed={brief(params['seed'])}: expected an integer below 2**32")
    for name, options in _CHOICES.items():
        if not isinstance(params[name], str) or params[name] not in options:
            raise UserError(f"{name}={brief(params[name])}: expected one of {', '.join(options)}")
    for name, strict in (("lr", True), ("weight_decay", False)):
        value = params[name]
        if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                or not (value > 0 if strict else value >= 0)):
            raise UserError(f"{name}={brief(value)}: expected a finite number {'> 0' if strict else '≥ 0'}")
    pooling = params["pooling"]
    if (not isinstance(pooling, list | tuple) or not pooling or len(set(pooling)) < len(pooling)
            or any(p not in POOLS for p in pooling)):
        raise UserError(f"pooling={brief(pooling)}: expected a non-empty list of distinct names among {', '.join(POOLS)}")
    if not isinstance(params["pair_weight"], bool):
        raise UserError(f"pair_weight={brief(params['pair_weight'])}: expected True or False")
    if not isinstance(params["device"], str) or not re.fullmatch(r"cpu|cuda(:\d+)?", params["device"]):
        raise UserError(f"device={brief(params['device'])}: expected 'cpu', 'cuda' or 'cuda:N'")


def sized_threads(nodes: float) -> int:
    """torch threads for passes over ``nodes`` nodes: one per :data:`NODES_PER_THREAD`, at most the CPUs available."""
    return max(1, min(available_cpus(), int(nodes // NODES_PER_THREAD)))


def _device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"device={name!r}: CUDA is not available on this machine")
    return torch.device(name)


class _Item(NamedTuple):
    """A training graph: its encoding, the per-run target, the runs a step may sample."""

    encoded: EncodedGraph
    target: np.ndarray
    runs: np.ndarray


class CostModel:
    """Kaufman-style GNN cost model: ``fit(graphs)`` then ``predict(graph)``.

    ``predict`` gives scores (higher = slower) for tile and layout graphs, runtimes in ns for absolute ones.
    Layout graphs need ``join='early'``. Fitted attributes end in ``_``.

    ``members``: networks trained side by side and averaged (a deep ensemble). Three by default: on every data set
    measured (the real TPU tiles, the CPU absolute runtimes, PF on the joint task) three beat one, for about 2.2×
    the CPU (data/costmodel/README.md).

    ``threads``: torch threads while fitting and predicting; None sizes them to the work, one per
    :data:`NODES_PER_THREAD` nodes of a training step, at most the CPUs this process may use (a step of a few
    thousand nodes, the tile data's, runs fastest on one; a step of large layout graphs uses them all).
    """

    def __init__(self, *, join: str = "early", hidden: int = 64, layers: int = 2, opcode_dim: int = 16, aggr: str = "mean",
                 pooling: Sequence[str] = ("sum", "mean", "max"), loss: str = "auto", pair_weight: bool = False,
                 configs_per_graph: int = 32, graphs_per_step: int = 8, epochs: int = 100, patience: int = 10, lr: float = 1e-3,
                 weight_decay: float = 0.0, seed: int = 0, device: str = "cpu", threads: int | None = None,
                 readout: str = "pool", members: int = 3) -> None:
        self.join, self.hidden, self.layers, self.opcode_dim, self.aggr = join, hidden, layers, opcode_dim, aggr
        self.pooling, self.loss, self.pair_weight = pooling, loss, pair_weight
        self.configs_per_graph, self.graphs_per_step, self.epochs, self.patience = configs_per_graph, graphs_per_step, epochs, patience
        self.lr, self.weight_decay, self.seed, self.device, self.threads = lr, weight_decay, seed, device, threads
        self.readout, self.members = readout, members

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters, JSON-able (``pooling`` as a list)."""
        names = ("join", "hidden", "layers", "opcode_dim", "aggr", "pooling", "loss", "pair_weight", "configs_per_graph",
                 "graphs_per_step", "epochs", "patience", "lr", "weight_decay", "seed", "device", "threads", "readout", "members")
        params = {name: getattr(self, name) for name in names}
        params["pooling"] = list(params["pooling"]) if isinstance(params["pooling"], list | tuple) else params["pooling"]
        return params

    # -- fitting -------------------------------------------------------------------------------------------------

    def fit(self, graphs: Sequence[TensorGraph], val_graphs: Sequence[TensorGraph] | None = None,
            on_epoch: Callable[[int, float, float], None] | None = None) -> CostModel:
        """Train; with ``val_graphs``, stop after ``patience`` epochs without a better validation metric and keep
        the best epoch's weights. ``on_epoch(epoch, train_loss, val_metric)`` (NaN metric without validation)."""
        check_params(self.get_params())
        device = _device(self.device)
        train = check_graphs(graphs, "graphs")
        self.task_ = train[0].task
        self.shape_ = (train[0].node_feat.shape[1], train[0].config_feat.shape[-1])
        self._check_compatible(train, "graphs")
        if self.task_ == "layout" and self.join == "late":
            raise UserError("join='late': layout configurations belong to nodes; layout graphs need join='early'")
        if self.readout == "additive" and self.join == "late":
            raise UserError("readout='additive' sums the nodes' own costs, which must see the configuration: use join='early'")
        loss = self._loss()
        val = None if val_graphs is None else check_graphs(val_graphs, "val_graphs")
        if val is not None:
            self._check_compatible(val, "val_graphs")
        torch.manual_seed(int(self.seed))
        rng = np.random.RandomState(self.seed)
        self.target_ = self._target_stats(train)
        learnable = self._learnable(train)
        self.featurizer_ = Featurizer.fit([g for g, _, _ in learnable])
        items = [_Item(self.featurizer_.encode(g), target, runs) for g, target, runs in learnable]
        per_pair = float(np.mean([len(g.opcodes) for g, _, _ in learnable]))
        self.threads_ = self.threads or sized_threads(per_pair * self.graphs_per_step * (self.configs_per_graph if self.join == "early" else 1))
        self.net_ = self._network().to(device)
        with threads(self.threads_):
            self._train(items, val, loss, rng, device, on_epoch)
        return self

    def _loss(self) -> Loss:
        ranking = self.task_ != "absolute"
        name = self.loss if self.loss != "auto" else ("hinge" if ranking else "mse")
        if ranking != (name in RANKING_LOSSES):
            raise UserError(f"loss={self.loss!r}: a {self.task_} task takes {'hinge, logistic or listmle' if ranking else 'mse'}")
        if self.pair_weight and name not in ("hinge", "logistic"):
            raise UserError(f"pair_weight=True: only the pairwise losses (hinge, logistic) weight pairs, not {name}")
        if name == "mse":
            return F.mse_loss
        return listmle_loss if name == "listmle" else partial(pairwise_loss, kind=name, weighted=self.pair_weight)

    def _target_stats(self, graphs: list[TensorGraph]) -> tuple[float, float]:
        """Mean and spread of training log runtimes (absolute task); the identity otherwise."""
        if self.task_ != "absolute":
            return 0.0, 1.0
        logs = np.log(np.concatenate([g.runtime[g.valid] for g in graphs]))
        if not len(logs):
            raise UserError("graphs: no valid run to learn runtimes from")
        return float(logs.mean()), (float(logs.std()) if logs.std() > 1e-6 else 1.0)

    def _learnable(self, graphs: list[TensorGraph]) -> list[tuple[TensorGraph, np.ndarray, np.ndarray]]:
        """(graph, per-run target, runs to sample) for graphs with two valid runs to rank, or one runtime to regress."""
        least = 1 if self.task_ == "absolute" else 2
        mean, std = self.target_
        found = []
        for g in graphs:
            runtime = np.where(g.valid, g.relative_runtime() if self.task_ != "absolute" else g.runtime, np.nan)
            runs = np.flatnonzero(np.isfinite(runtime) & (runtime > 0))
            if len(runs) >= least:
                target = runtime if self.task_ != "absolute" else (np.log(runtime) - mean) / std
                found.append((g, target.astype(np.float32), runs))
        if not found:
            raise UserError(f"graphs: no graph has {least} valid run{'s' if least > 1 else ''} to learn from")
        return found

    def _network(self) -> CostNet | Ensemble:
        """One network, or an ensemble of ``members`` (a lone network keeps the checkpoint layout it always had)."""
        nets = [CostNet(opcodes=len(self.featurizer_.vocabulary), node_features=self.shape_[0], config_features=self.shape_[1],
                        hidden=self.hidden, opcode_dim=self.opcode_dim, layers=self.layers, aggr=self.aggr, join=self.join,
                        pooling=self.pooling, totals=len(self.featurizer_.total_keys), readout=self.readout)
                for _ in range(self.members)]
        return nets[0] if len(nets) == 1 else Ensemble(nets)

    def _train(self, items: list[_Item], val: list[TensorGraph] | None, loss: Loss, rng: np.random.RandomState,
               device: torch.device, on_epoch: Callable[[int, float, float], None] | None) -> None:
        optimizer = torch.optim.Adam(self.net_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        encoded = [] if val is None else [self.featurizer_.encode(g) for g in val]
        self.history_: list[tuple[int, float, float]] = []
        best: float | None = None
        best_state: dict[str, torch.Tensor] | None = None
        stale = 0
        self.best_epoch_ = self.epochs
        for epoch in range(1, self.epochs + 1):
            train_loss = self._epoch(items, optimizer, loss, rng, device)
            metric = math.nan if val is None else self._metric(val, encoded)
            self.history_.append((epoch, train_loss, metric))
            if on_epoch is not None:
                on_epoch(epoch, train_loss, metric)
            if val is None:
                continue
            if not math.isnan(metric) and (best is None or (metric < best if self.task_ == "absolute" else metric > best)):
                best, self.best_epoch_, stale = metric, epoch, 0
                best_state = {k: v.detach().clone() for k, v in self.net_.state_dict().items()}
            else:
                stale += 1
                if stale >= self.patience:
                    break
        if best_state is not None:
            self.net_.load_state_dict(best_state)

    def _epoch(self, items: list[_Item], optimizer: torch.optim.Optimizer, loss: Loss, rng: np.random.RandomState,
               device: torch.device) -> float:
        """One pass over the training graphs in random order; the mean step loss."""
        self.net_.train()
        order = rng.permutation(len(items))
        losses = []
        for start in range(0, len(items), self.graphs_per_step):
            chunk = [items[i] for i in order[start:start + self.graphs_per_step]]
            runs = [r if len(r) <= self.configs_per_graph else rng.choice(r, self.configs_per_graph, replace=False)
                    for r in (item.runs for item in chunk)]
            out = member_outputs(self.net_(make_batch([item.encoded for item in chunk], runs, self.join, device)))
            parts = torch.split(out, [len(r) for r in runs], dim=1)
            value = torch.stack([loss(member, torch.from_numpy(item.target[r]).to(device))
                                 for part, item, r in zip(parts, chunk, runs) for member in part]).mean()
            optimizer.zero_grad()
            torch.autograd.backward(value)
            optimizer.step()
            losses.append(value.item())
        return float(np.mean(losses))

    def _metric(self, graphs: list[TensorGraph], encoded: list[EncodedGraph]) -> float:
        """Mean over graphs of Kendall τ (ranking tasks) or of the mean absolute percentage error (absolute)."""
        if self.task_ == "absolute":
            values = [float(np.mean(ape(self._runtimes(self._outputs(e)), g.runtime))) if g.valid.any() else math.nan
                      for g, e in zip(graphs, encoded)]
        else:
            values = [kendall_tau(self._outputs(e), g.relative_runtime()) for g, e in zip(graphs, encoded)]
        defined = [v for v in values if not math.isnan(v)]
        return float(np.mean(defined)) if defined else math.nan

    def refine(self, graph: TensorGraph, passes: int = 10) -> CostModel:
        """``passes`` gradient steps on one graph's valid runs, from the fitted weights: the online refit of a
        tuner that ranks a program's configurations with the model and measures the best-ranked (AutoTVM refits
        its model on each program's measurements the same way). Needs two valid runs to rank (one, absolute)."""
        if not hasattr(self, "net_"):
            raise UserError("CostModel is not fitted: call fit() or CostModel.load() first")
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
            raise UserError(f"passes={brief(passes)}: expected an integer ≥ 0")
        self._check_compatible([graph], "graph")
        if passes == 0:
            return self
        (_, target, runs), = self._learnable([graph])
        item = _Item(self.featurizer_.encode(graph), target, runs)
        pairs = min(len(runs), self.configs_per_graph) if self.join == "early" else 1
        device = next(self.net_.parameters()).device
        optimizer = torch.optim.Adam(self.net_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        rng = np.random.RandomState(self.seed)
        loss = self._loss()
        with threads(self.threads or sized_threads(len(graph.opcodes) * pairs)):
            for _ in range(passes):
                self._epoch([item], optimizer, loss, rng, device)
        return self

    # -- prediction ----------------------------------------------------------------------------------------------

    def predict(self, graph: TensorGraph) -> np.ndarray:
        """(c,) scores, higher = slower (tile, layout), or predicted runtimes in ns (absolute), for every run."""
        if not hasattr(self, "net_"):
            raise UserError("CostModel is not fitted: call fit() or CostModel.load() first")
        if not isinstance(graph, TensorGraph):
            raise UserError(f"graph: {brief(graph)} is not a TensorGraph")
        self._check_compatible([graph], "graph")
        pairs = len(graph.runtime) if self.join == "early" else 1
        with threads(self.threads or sized_threads(min(PREDICT_NODES, len(graph.opcodes) * pairs))):
            out = self._outputs(self.featurizer_.encode(graph))
        return self._runtimes(out) if self.task_ == "absolute" else out

    def _runtimes(self, out: np.ndarray) -> np.ndarray:
        mean, std = self.target_
        return np.exp(out * std + mean)

    def _outputs(self, encoded: EncodedGraph) -> np.ndarray:
        """The head's output for every run, in chunks that bound the nodes of one forward pass.

        Each distinct configuration is scored once: runs of one configuration (real kernels repeat them) then tie
        exactly, rather than by the last bits of a batched matrix product, which metrics would read as an order.
        """
        self.net_.train(False)  # inference mode (torch), as DiffTune's learning does
        if not len(encoded.configs):
            return np.zeros(0)
        _, runs, inverse = np.unique(encoded.configs.flatten(1).numpy(), axis=0, return_index=True, return_inverse=True)
        chunk = max(1, PREDICT_NODES // encoded.data.num_nodes) if self.join == "early" else len(runs)
        device = next(self.net_.parameters()).device
        with torch.no_grad():
            outs = [member_outputs(self.net_(make_batch([encoded], [runs[i:i + chunk]], self.join, device))).mean(0).cpu()
                    for i in range(0, len(runs), chunk)]
        return torch.cat(outs).numpy().astype(np.float64)[inverse.reshape(-1)]

    def _check_compatible(self, graphs: list[TensorGraph], field: str) -> None:
        for g in graphs:
            if not len(g.opcodes):
                raise UserError(f"{field}: graph {g.name!r} has no nodes")
            if g.task != self.task_:
                raise UserError(f"{field}: graph {g.name!r} is a {g.task} graph, the model's task is {self.task_}")
            shape = (g.node_feat.shape[1], g.config_feat.shape[-1])
            if shape != self.shape_:
                raise UserError(f"{field}: graph {g.name!r} has {shape[0]} node and {shape[1]} configuration features, "
                                f"the model {self.shape_[0]} and {self.shape_[1]}")

    # -- checkpoints ---------------------------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Weights, vocabulary, feature statistics and hyper-parameters; only plain types, for ``weights_only`` loading."""
        if not hasattr(self, "net_"):
            raise UserError("CostModel is not fitted: nothing to save")
        torch.save({"format": FORMAT, "params": self.get_params(), "task": self.task_, "shape": list(self.shape_),
                    "featurizer": self.featurizer_.to_state(), "target": list(self.target_), "best_epoch": self.best_epoch_,
                    "history": [list(h) for h in self.history_], "state": {k: v.cpu() for k, v in self.net_.state_dict().items()}}, path)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> CostModel:
        """A fitted model from :meth:`save`'s file, on ``device`` (default: the one it was trained with)."""
        try:
            state = torch.load(path, weights_only=True, map_location="cpu")
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
            raise UserError(f"checkpoint {str(path)!r}: cannot be read ({brief(str(error), 120)})") from error
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise UserError(f"checkpoint {str(path)!r}: not a {FORMAT} checkpoint")
        # a checkpoint written before ensembles holds one network and no "members"
        params = {"members": 1, **state["params"], "pooling": tuple(state["params"]["pooling"])}
        model = cls(**{**params, **({"device": device} if device else {})})
        check_params(model.get_params())
        model.task_, model.shape_ = state["task"], tuple(state["shape"])
        model.featurizer_ = Featurizer.from_state(state["featurizer"])
        model.target_ = tuple(state["target"])
        model.best_epoch_, model.history_ = state["best_epoch"], [tuple(h) for h in state["history"]]
        model.net_ = model._network()
        model.net_.load_state_dict(state["state"])
        model.net_.to(_device(model.device))
        return model
