"""The non-neural lines every cost-model result is reported against (costmodel.md §5), all scikit-learn style:
``fit(graphs)`` returns the model, ``predict(graph)`` gives one value per configuration of the graph.

* :class:`TileHeuristic`: the analytical trip-count + working-set model of the tile task; scores, higher = slower.
* :class:`Roofline`: the additive roofline ``t = a + b·flops + c·bytes + d·#kernels`` of the absolute task, in ns,
  fitted by non-negative least squares on relative error. It stands in for XLA's analytical model.
* :class:`GBDT`: gradient-boosted trees on :class:`GraphFeatures`; scores for tile/layout, ns for absolute.

Error runs (NaN runtime) are never fitted to; predictions still cover them, and the metrics skip them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import nnls
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from engine.errors import UserError, brief
from engine.surrogates.costmodel.features import GraphFeatures, check_graphs, tile_estimates
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import kendall_tau

#: On-chip budgets the heuristic's fit tries, in working-set units: 2⁴ … 2³⁰ in factors of 2, then no budget at all.
BUDGETS = (*(2.0**e for e in range(4, 31)), np.inf)


def _number(name: str, value: Any, low: float, *, integer: bool = False, inclusive: bool = True, infinite: bool = False) -> None:
    """Parameters are checked at fit, scikit-learn style; a bad one names itself."""
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    ok = isinstance(value, kinds) and not isinstance(value, bool) and (value >= low if inclusive else value > low)
    if not ok or np.isnan(value) or (np.isinf(value) and not infinite):
        bound = f"{'≥' if inclusive else '>'} {low:g}"
        raise UserError(f"{name} must be {'an integer' if integer else 'a number'} {bound}, got {brief(value)}")


def _fitted(model: object, attribute: str) -> None:
    if not hasattr(model, attribute):
        raise UserError(f"{type(model).__name__} is not fitted: call fit(graphs) first")


class TileHeuristic:
    """Analytical tile-size model: a tiled loop nest pays a fixed cost per trip and streams its working set,
    and slows down once the working set spills out of on-chip memory.

        score = trips × (overhead + W) × max(1, W / budget)

    with trips and the working set W from :func:`tile_estimates`, both in the bounds' units (see there).
    ``overhead`` is the per-trip cost (loop and DMA set-up) in working-set units streamed; it only has to dwarf W
    (on the real TPU kernels, τ is the same for 10³ … 10⁷, and collapses at 0, where trips × W is nearly constant).
    ``budget`` is the on-chip memory; ``"fit"`` picks it from :data:`BUDGETS` for the best mean Kendall τ on the
    training graphs (ties: the larger budget, the weaker claim). Nothing else is learned; a number fits nothing.
    """

    def __init__(self, overhead: float = 4096.0, budget: float | str = "fit") -> None:
        self.overhead = overhead
        self.budget = budget

    def fit(self, graphs: Sequence[TensorGraph]) -> TileHeuristic:
        _number("overhead", self.overhead, 0.0)
        if self.budget != "fit":
            _number("budget", self.budget, 0.0, inclusive=False, infinite=True)
        graphs = check_graphs(graphs)
        estimates = [tile_estimates(graph) for graph in graphs]  # also checks that every graph is a tile graph
        if self.budget != "fit":
            self.budget_ = float(self.budget)
            return self
        self.tau_by_budget_ = {budget: self._mean_tau(graphs, estimates, budget) for budget in BUDGETS}
        quality = np.nan_to_num(np.array(list(self.tau_by_budget_.values())), nan=-np.inf)
        self.budget_ = float(BUDGETS[len(BUDGETS) - 1 - int(np.argmax(quality[::-1]))])
        return self

    def _mean_tau(self, graphs: list[TensorGraph], estimates: list[tuple[np.ndarray, np.ndarray]], budget: float) -> float:
        """Mean τ over the graphs where it is defined (NaN when it is nowhere)."""
        taus = np.array([kendall_tau(self._score(*e, budget), graph.relative_runtime()) for e, graph in zip(estimates, graphs)])
        return float(taus[np.isfinite(taus)].mean()) if np.isfinite(taus).any() else float("nan")

    def _score(self, trips: np.ndarray, working_set: np.ndarray, budget: float) -> np.ndarray:
        score: np.ndarray = trips * (self.overhead + working_set) * np.maximum(1.0, working_set / budget)
        return score

    def predict(self, graph: TensorGraph) -> np.ndarray:
        """Scores, higher = slower; comparable only among the configurations of one graph."""
        _fitted(self, "budget_")
        return self._score(*tile_estimates(graph), self.budget_)


class Roofline:
    """``t = a + b·flops + c·bytes + d·kernels`` with a, b, c, d ≥ 0 (a fixed launch cost, a compute and a
    memory rate, a per-kernel cost), fitted on every valid run by NNLS on (t̂ − t) / t: the absolute task is
    judged by relative error, and unweighted least squares would fit the slowest kernels only. Needs
    ``extra['graph_flops']`` and ``extra['graph_bytes']``; ``extra['kernels']`` defaults to 1. ``coef_`` holds
    a, b, c, d in the order of :attr:`TERMS`."""

    TERMS = ("intercept", "flops", "bytes", "kernels")

    def fit(self, graphs: Sequence[TensorGraph]) -> Roofline:
        graphs = check_graphs(graphs)
        rows, runtimes = [], []
        for graph in graphs:
            valid = graph.valid
            rows.append(np.tile(self._terms(graph), (int(valid.sum()), 1)))
            runtimes.append(graph.runtime[valid])
        design, t = np.vstack(rows), np.concatenate(runtimes)
        if not len(t):
            raise UserError("Roofline.fit: the graphs have no valid run (every runtime is an error)")
        scale = np.abs(design).max(axis=0)
        scale[scale == 0] = 1.0  # a term no graph uses keeps coefficient 0
        coef, _ = nnls(design / scale / t[:, None], np.ones(len(t)))
        self.coef_ = coef / scale
        return self

    def _terms(self, graph: TensorGraph) -> np.ndarray:
        if graph.task != "absolute":
            raise UserError(f"graph {graph.name!r}: the roofline predicts absolute runtimes, not a {graph.task} ranking")
        missing = [key for key in ("graph_flops", "graph_bytes") if not np.isfinite(graph.extra.get(key, np.nan))]
        if missing:
            raise UserError(f"graph {graph.name!r}: the roofline needs extra[{missing[0]!r}] (static counts from the compiler)")
        terms = np.array([1.0, graph.extra["graph_flops"], graph.extra["graph_bytes"], graph.extra.get("kernels", 1.0)])
        if not np.isfinite(terms).all() or (terms < 0).any():
            raise UserError(f"graph {graph.name!r}: flops, bytes and kernels must be finite and ≥ 0, got {brief(terms[1:].tolist())}")
        return terms

    def predict(self, graph: TensorGraph) -> np.ndarray:
        """Runtime in ns, the same for every run of the graph (the counts are per graph)."""
        _fitted(self, "coef_")
        return np.full(len(graph.runtime), float(self._terms(graph) @ self.coef_))


class GBDT:
    """scikit-learn's HistGradientBoostingRegressor on :class:`GraphFeatures` rows, one per valid run.

    * Ranking tasks (tile, layout) fit log(relative runtime) centred per graph: only the order within a graph
      matters (§1.3), and centring spares the trees from spending splits on kernel-to-kernel offsets.
      ``predict`` returns that log, a score (higher = slower).
    * The absolute task fits log(runtime) and ``predict`` returns exp of it, in ns.

    Each graph's runs weigh 1 / (its valid runs) in total when ``balance`` is set, so one kernel with hundreds of
    configurations does not drown the others, as the metrics average over graphs too.

    ``threads`` caps OpenMP while fitting and predicting (None: all cores). The default is 1: on thousands of
    rows the trees gain little from threads, and OpenMP's busy-waiting on a shared 2-core machine was measured
    25× slower than one thread.
    """

    def __init__(self, max_iter: int = 200, learning_rate: float = 0.1, max_leaf_nodes: int = 15, min_samples_leaf: int = 5,
                 l2_regularization: float = 0.0, balance: bool = True, threads: int | None = 1, seed: int = 0) -> None:
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.balance = balance
        self.threads = threads
        self.seed = seed

    def _check_params(self) -> None:
        _number("max_iter", self.max_iter, 1, integer=True)
        _number("learning_rate", self.learning_rate, 0.0, inclusive=False)
        _number("max_leaf_nodes", self.max_leaf_nodes, 2, integer=True)
        _number("min_samples_leaf", self.min_samples_leaf, 1, integer=True)
        _number("l2_regularization", self.l2_regularization, 0.0)
        _number("seed", self.seed, 0, integer=True)
        if self.threads is not None:
            _number("threads", self.threads, 1, integer=True)
        if not isinstance(self.balance, bool | np.bool_):
            raise UserError(f"balance must be True or False, got {brief(self.balance)}")

    def fit(self, graphs: Sequence[TensorGraph], graph_weights: Sequence[float] | None = None) -> GBDT:
        """``graph_weights`` scale each graph's runs (default 1 each): how a tuner makes one program's own
        measurements count for more than any single training program."""
        self._check_params()
        graphs = check_graphs(graphs)
        scale = np.ones(len(graphs)) if graph_weights is None else np.asarray(graph_weights, dtype=float)
        if scale.shape != (len(graphs),) or not (np.isfinite(scale) & (scale > 0)).all():
            raise UserError(f"graph_weights: one finite weight > 0 per graph, got {brief(graph_weights)}")
        self.features_ = GraphFeatures().fit(graphs)
        self.task_ = graphs[0].task
        rows, targets, weights = [], [], []
        for graph, weight in zip(graphs, scale):
            valid = graph.valid
            if not valid.any():
                continue
            rows.append(self.features_.transform(graph)[valid])
            targets.append(self._target(graph, valid))
            weights.append(np.full(int(valid.sum()), weight / valid.sum() if self.balance else weight))
        if not rows:
            raise UserError("GBDT.fit: the graphs have no valid run (every runtime is an error)")
        self.model_ = HistGradientBoostingRegressor(
            max_iter=self.max_iter, learning_rate=self.learning_rate, max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf, l2_regularization=self.l2_regularization, early_stopping=False,
            random_state=self.seed)
        with threadpool_limits(self.threads):
            self.model_.fit(np.vstack(rows), np.concatenate(targets), sample_weight=np.concatenate(weights))
        return self

    def _target(self, graph: TensorGraph, valid: np.ndarray) -> np.ndarray:
        """What the trees fit, for the valid runs."""
        absolute = self.task_ == "absolute"
        logged: np.ndarray = np.log((graph.runtime if absolute else graph.relative_runtime())[valid])
        return logged if absolute else logged - logged.mean()

    def predict(self, graph: TensorGraph) -> np.ndarray:
        """Scores (higher = slower) for a ranking graph, runtimes in ns for an absolute one."""
        _fitted(self, "model_")
        with threadpool_limits(self.threads):
            predicted: np.ndarray = self.model_.predict(self.features_.transform(graph))
        return np.exp(predicted) if self.task_ == "absolute" else predicted


class CompilerDefault:
    """The compiler's own choice (TpuGraphs' ``is_default`` run) ranked first, every other run tied behind it: the
    line a learned model must beat to be worth asking, since the compiler picks it for free."""

    def fit(self, graphs: Sequence[TensorGraph]) -> CompilerDefault:
        check_graphs(graphs)
        self.fitted_ = True
        return self

    def predict(self, graph: TensorGraph) -> np.ndarray:
        _fitted(self, "fitted_")
        scores = np.ones(len(graph.runtime))
        if graph.default is not None:  # else no preference: a fold of configurations without the default run
            scores[graph.default] = 0.0
        return scores
