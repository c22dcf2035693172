"""Program-grouped cross-validation of cost models side by side (costmodel.md §1.4, §5): every model sees the same
folds, seeds × folds give the spread a single number hides (τ moves by ~0.1 between retrainings), and the noise
floor of the data is reported next to the figures it bounds.

Models are named: ``gnn`` (the GraphSAGE model), ``gbdt`` (trees on aggregated graph features), ``heuristic``
(trip count and working set, tile task), ``roofline`` (NNLS on flops and bytes, absolute task) and ``default``
(the compiler's own configuration first). Each has
``fit(graphs) -> self`` and ``predict(graph)``; the GNN also gets validation programs carved from its training
fold for early stopping, never from the test fold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import TOP_K, kendall_tau, score_table, summary
from engine.surrogates.costmodel.splits import config_folds, group_folds, train_val_test

#: Which models make sense for which task.
MODELS: dict[str, tuple[str, ...]] = {"gnn": ("tile", "layout", "absolute"), "gbdt": ("tile", "layout", "absolute"),
                                      "heuristic": ("tile",), "roofline": ("absolute",), "default": ("tile", "layout")}
Progress = Callable[[str], None]
#: Fewest validation programs the GNN stops early on.
MIN_VALIDATION = 3


def make_model(name: str, seed: int, params: Mapping[str, Any] | None = None) -> Any:
    """A fresh, unfitted model; ``params`` are its hyper-parameters (validated by the model at fit)."""
    options = dict(params or {})
    if name == "gnn":
        from engine.surrogates.costmodel.training import CostModel  # torch: only where the GNN is asked for

        return CostModel(**{"seed": seed, **options})
    from engine.surrogates.costmodel.baselines import GBDT, CompilerDefault, Roofline, TileHeuristic

    if name == "gbdt":
        return GBDT(**{"seed": seed, **options})
    if name == "heuristic":
        return TileHeuristic(**options)
    if name == "roofline":
        return Roofline(**options)
    if name == "default":
        return CompilerDefault(**options)
    raise UserError(f"model: {brief(name)} is not one of {', '.join(MODELS)}")


def fit_model(name: str, model: Any, graphs: Sequence[TensorGraph], seed: int,
              on_epoch: Callable[[int, float, float], None] | None = None) -> Any:
    """Fit ``model``; the GNN holds back 10% of the training programs to stop early when that is at least
    :data:`MIN_VALIDATION` programs: stopping on one or two kernels follows their noise (on the 15 real TPU
    kernels, τ 0.72 with one validation kernel against 0.8 for the full epochs)."""
    if name != "gnn":
        return model.fit(graphs)
    programs = {g.program for g in graphs}
    if len(programs) < 10 * MIN_VALIDATION:
        return model.fit(graphs, on_epoch=on_epoch)
    train, val, _ = train_val_test(graphs, seed, (0.9, 0.1, 0.0))
    return model.fit([graphs[i] for i in train], [graphs[i] for i in val], on_epoch=on_epoch)


@dataclass(frozen=True)
class CrossValidation:
    """Per-graph scores (one row per model, seed, fold and test graph), per-configuration predictions, the summary
    per model (mean over seeds of the overall figures, with the spread across seeds), fit seconds per model, the
    noise floor of the data and the protocol (:func:`protocol`)."""

    scores: pd.DataFrame
    predictions: pd.DataFrame
    table: pd.DataFrame
    seconds: dict[str, float]
    noise: dict[str, float]
    protocol: str


def cross_validate(graphs: Sequence[TensorGraph], models: Sequence[str], *, folds: int = 5, seeds: Sequence[int] = (0, 1, 2),
                   params: Mapping[str, Mapping[str, Any]] | None = None, progress: Progress | None = None) -> CrossValidation:
    """Fit every model on every (seed, fold) training part and score it on the held-out programs."""
    graphs = list(graphs)
    models = _check(graphs, models, seeds)
    say = progress or (lambda _: None)
    score_rows, prediction_rows = [], []
    seconds = dict.fromkeys(models, 0.0)
    for seed in seeds:
        for fold, (training, held_out, runs) in enumerate(_splits(graphs, folds, int(seed))):
            for name in models:
                say(f"seed {seed}, fold {fold + 1}: {name} on {len(training)} graphs, testing on {len(held_out)}")
                started = time.process_time()
                model = fit_model(name, make_model(name, int(seed), (params or {}).get(name)), training, int(seed))
                predicted = [np.asarray(model.predict(g), dtype=float) for g in held_out]
                seconds[name] += time.process_time() - started
                score_rows.append(score_table(held_out, predicted).assign(model=name, seed=int(seed), fold=fold))
                prediction_rows += [_predictions(g, p, name, int(seed), fold, runs) for g, p in zip(held_out, predicted)]
    scores = pd.concat(score_rows, ignore_index=True)
    return CrossValidation(scores, pd.concat(prediction_rows, ignore_index=True), model_table(scores), seconds,
                           noise_floor(graphs), protocol(graphs))


def protocol(graphs: Sequence[TensorGraph]) -> str:
    """``programs`` (whole programs held out) or, with a single program, ``configurations`` (its configurations
    split into folds; the graph itself was seen in training, so this is the weaker test)."""
    return "programs" if len({g.program for g in graphs}) > 1 else "configurations"


Split = tuple[list[TensorGraph], list[TensorGraph], np.ndarray | None]


def _splits(graphs: list[TensorGraph], folds: int, seed: int) -> list[Split]:
    """(training graphs, held-out graphs, the held-out runs' indices in the original graph when configurations
    were split)."""
    if protocol(graphs) == "programs":
        return [([graphs[i] for i in train], [graphs[i] for i in test], None) for train, test in group_folds(graphs, folds, seed)]
    if len(graphs) != 1:
        raise UserError(f"graphs: {len(graphs)} graphs of one program; configuration folds take a single graph")
    graph = graphs[0]
    return [([graph.with_runs(train)], [graph.with_runs(test)], test) for train, test in config_folds(graph, folds, seed)]


def _check(graphs: list[TensorGraph], models: Sequence[str], seeds: Sequence[int]) -> list[str]:
    if not graphs:
        raise UserError("graphs: none to evaluate")
    tasks = {g.task for g in graphs}
    if len(tasks) != 1:
        raise UserError(f"graphs: one task at a time, got {', '.join(sorted(tasks))}")
    task = tasks.pop()
    chosen = list(dict.fromkeys(models))
    if not chosen:
        raise UserError("models: name at least one")
    for name in chosen:
        if name not in MODELS:
            raise UserError(f"model: {brief(name)} is not one of {', '.join(MODELS)}")
        if task not in MODELS[name]:
            raise UserError(f"model: {name} does not apply to the {task} task (it serves {', '.join(MODELS[name])})")
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0 for s in seeds):
        raise UserError(f"seeds: non-negative integers, got {brief(seeds)}")
    return chosen


def _predictions(graph: TensorGraph, predicted: np.ndarray, model: str, seed: int, fold: int,
                 runs: np.ndarray | None) -> pd.DataFrame:
    config = np.arange(len(graph.runtime)) if runs is None else runs
    return pd.DataFrame({"model": model, "seed": seed, "fold": fold, "graph": graph.name, "program": graph.program,
                         "config": config, "runtime": graph.runtime, "prediction": predicted})


def model_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per model: the overall figures of each seed (every program weighing the same), their mean over
    seeds, and the spread of mean τ across seeds (``tau_seed_sd``)."""
    rows = []
    for name, by_model in scores.groupby("model", sort=False):
        per_seed = pd.DataFrame([summary(rows).loc["overall"] for _, rows in by_model.groupby("seed")])
        row = {"model": name, "graphs": int(by_model.groupby("seed").size().iloc[0]), "runs": len(by_model),
               "tau": per_seed["tau_mean"].mean(), "tau_seed_sd": per_seed["tau_mean"].std(ddof=0)}
        row |= {f"slowdown_{k}": per_seed[f"slowdown_{k}_median"].mean() for k in TOP_K}
        row |= {"mape": per_seed["mape_mean"].mean(), "median_ape": per_seed["median_ape_median"].mean()}
        rows.append(row)
    return pd.DataFrame(rows)


def noise_floor(graphs: Sequence[TensorGraph]) -> dict[str, Any]:
    """How far two measurements of the *same* configuration lie apart (|log ratio|): the error no model can get
    under. From the timing passes the files keep (pass 1 against pass 2 of every configuration timed in both), else
    from configurations measured more than once; empty when the data holds neither. With passes of two or more
    configurations of a graph, ``tau_ceiling`` is the mean τ (per program, then over programs) of pass 1's ranking
    against pass 2's: the τ a perfect model of one pass scores on the other."""
    pairs = [_pass_pairs(graph) for graph in graphs]
    spreads = [np.abs(np.log(first / second)) for first, second in pairs]
    source = "passes"
    if not sum(map(len, spreads)):
        spreads, source = [_repeat_spreads(graph) for graph in graphs], "repeats"
    flat = np.concatenate(spreads) if spreads else np.empty(0)
    if not len(flat):
        return {}
    floor: dict[str, Any] = {"source": source, "configurations": int(len(flat)), "median_log_ratio": float(np.median(flat)),
                             "p90_log_ratio": float(np.quantile(flat, 0.9)), "max_log_ratio": float(flat.max())}
    taus = pd.DataFrame([{"program": graph.program, "tau": kendall_tau(first, second)}
                         for graph, (first, second) in zip(graphs, pairs) if len(first) > 1]).dropna()
    if source == "passes" and not taus.empty:
        floor["tau_ceiling"] = float(taus.groupby("program")["tau"].mean().mean())
    return floor


def _pass_pairs(graph: TensorGraph) -> tuple[np.ndarray, np.ndarray]:
    """Pass 1 and pass 2 of every valid configuration that both timed."""
    if graph.passes is None or graph.passes.shape[1] < 2:
        return np.empty(0), np.empty(0)
    first, second = graph.passes[:, 0], graph.passes[:, 1]
    both = graph.valid & np.isfinite(first) & np.isfinite(second)
    return first[both], second[both]


def _repeat_spreads(graph: TensorGraph) -> np.ndarray:
    """|log(max ÷ min)| of each configuration that appears more than once among the graph's runs."""
    valid = graph.valid
    flat = graph.config_feat.reshape(len(graph.runtime), -1)[valid]
    _, group = np.unique(flat, axis=0, return_inverse=True)
    runtimes, group = graph.runtime[valid], group.ravel()
    return np.array([np.log(runtimes[group == g].max() / runtimes[group == g].min())
                     for g in np.unique(group) if (group == g).sum() > 1])


def noise_line(noise: Mapping[str, Any] | None) -> str:
    """The noise floor of an evaluation's data as one sentence."""
    if not noise:
        return "Noise floor: the data holds no configuration measured twice (no timing passes, no repeats), so it gives none."
    how = "timed in two passes" if noise.get("source") == "passes" else "measured twice or more"
    count = noise.get("configurations", noise.get("repeated", 0))  # "repeated": evaluations stored before the passes
    p90 = f", 90th percentile {noise['p90_log_ratio']:.1%}" if "p90_log_ratio" in noise else ""
    line = (f"Noise floor: {int(count):,} configurations {how} differ by a median {noise['median_log_ratio']:.1%} "
            f"(|log ratio|){p90}, at most {noise['max_log_ratio']:.1%}")
    if "tau_ceiling" in noise:
        line += f"; pass 1 ranks the configurations against pass 2 with τ {noise['tau_ceiling']:.3f}, the ceiling of any model's τ"
    return line + "."
