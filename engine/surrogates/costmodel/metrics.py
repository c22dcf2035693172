"""How well a cost model ranks or predicts the configurations of held-out graphs (costmodel.md §1.4).

* **Kendall τ-b** between predicted scores (higher = slower) and true runtimes over one graph's configurations.
* **Top-K slowdown**: the best true runtime among the model's K best-scored configurations ÷ the true best, so
  1.0 means the model's shortlist holds the optimum. TpuGraphs' *top-K error* is the slowdown − 1.
* **APE** |t̂ − t| / t of absolute predictions, as its mean (MAPE) and median.

Configurations rank by :meth:`TensorGraph.relative_runtime`. Error runs (NaN runtime) enter no metric, so a
model can never be credited with picking a failed run. Tied scores count as a random pick among the tied runs,
in expectation: a constant model scores chance level whatever the input order (TpuGraphs' argsort would credit it
with whichever run happens to come first).

:func:`score_table` gives one row per graph; :func:`summary` averages per program first, then over programs, so
a program with many kernels weighs no more than one with few.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from engine.errors import UserError, brief
from engine.surrogates.costmodel.graph import TensorGraph

TOP_K = (1, 5, 10)
#: Columns of :func:`score_table` holding a figure (the others name the graph).
FIGURES = ("tau", *(f"slowdown_{k}" for k in TOP_K), "mape", "median_ape")


def _valid(scores: np.ndarray, runtimes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (score, runtime) pairs of the runs that have a runtime."""
    scores, runtimes = np.asarray(scores, dtype=float), np.asarray(runtimes, dtype=float)
    if scores.shape != runtimes.shape or scores.ndim != 1:
        raise UserError(f"scores have shape {scores.shape}, the runtimes {runtimes.shape}: expected one score per run")
    keep = np.isfinite(runtimes) & (runtimes > 0)
    if not np.isfinite(scores[keep]).all():
        raise UserError(f"score {brief(float(scores[keep][~np.isfinite(scores[keep])][0]))} of a valid run is not a finite number")
    return scores[keep], runtimes[keep]


def kendall_tau(scores: np.ndarray, runtimes: np.ndarray) -> float:
    """τ-b over the valid runs; NaN with fewer than two of them or when either side is constant (undefined)."""
    s, t = _valid(scores, runtimes)
    if len(t) < 2 or np.ptp(s) == 0 or np.ptp(t) == 0:
        return float("nan")
    return float(kendalltau(s, t).statistic)


def topk_slowdown(scores: np.ndarray, runtimes: np.ndarray, k: int) -> float:
    """Best true runtime among the K best-scored valid runs ÷ the best runtime; all runs when K exceeds them.
    Runs tied at the K-th score are picked at random, and the expectation of that pick is returned."""
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise UserError(f"top-K needs an integer K ≥ 1, got {brief(k)}")
    s, t = _valid(scores, runtimes)
    if not len(t):
        return float("nan")
    boundary = np.sort(s)[min(k, len(t)) - 1]
    sure = t[s < boundary]
    tied = np.sort(t[s == boundary])
    return _expected_min(sure.min(initial=np.inf), tied, min(k, len(t)) - len(sure)) / float(t.min())


def _expected_min(floor: float, tied: np.ndarray, r: int) -> float:
    """E[min(floor, min of a random r-subset of ``tied``)], ``tied`` ascending: its i-th value (from 0) is the
    subset's minimum with probability C(n − 1 − i, r − 1) / C(n, r)."""
    n = len(tied)
    chance = np.array([comb(n - 1 - i, r - 1) / comb(n, r) for i in range(n)])
    return float(np.minimum(floor, tied) @ chance)


def topk_error(scores: np.ndarray, runtimes: np.ndarray, k: int) -> float:
    """TpuGraphs' top-K error: 0.2 means the best of the model's K picks is 20% slower than the optimum."""
    return topk_slowdown(scores, runtimes, k) - 1.0


def ape(predicted: np.ndarray, runtimes: np.ndarray) -> np.ndarray:
    """|t̂ − t| / t of every valid run."""
    p, t = _valid(predicted, runtimes)
    errors: np.ndarray = np.abs(p - t) / t
    return errors


def score_table(graphs: Sequence[TensorGraph], predictions: Sequence[np.ndarray]) -> pd.DataFrame:
    """One row per graph: τ and top-K slowdowns of the ranking (NaN for a graph of one valid configuration, which
    has none); MAPE and median APE for an absolute graph, whose predictions are runtimes in ns (NaN for a ranking
    graph, whose scores have no unit)."""
    if len(graphs) != len(predictions):
        raise UserError(f"{len(predictions)} predictions for {len(graphs)} graphs")
    return pd.DataFrame([_row(graph, np.asarray(predicted, dtype=float)) for graph, predicted in zip(graphs, predictions)],
                        columns=["graph", "program", "task", "n_configs", *FIGURES])


def _row(graph: TensorGraph, predicted: np.ndarray) -> dict[str, object]:
    if predicted.shape != graph.runtime.shape:
        raise UserError(f"graph {graph.name!r}: prediction of shape {predicted.shape} for {len(graph.runtime)} runs")
    ranked = graph.relative_runtime()
    try:
        errors = ape(predicted, graph.runtime) if graph.task == "absolute" else np.empty(0)
        row: dict[str, object] = {"graph": graph.name, "program": graph.program, "task": graph.task,
                                  "n_configs": int(graph.valid.sum()), "tau": kendall_tau(predicted, ranked)}
    except UserError as exc:
        raise UserError(f"graph {graph.name!r}: {exc}") from None
    ranking = int(graph.valid.sum()) > 1  # one configuration has no ranking: 1.0 would credit any model with its pick
    row |= {f"slowdown_{k}": topk_slowdown(predicted, ranked, k) if ranking else np.nan for k in TOP_K}
    has_errors = len(errors) > 0
    return row | {"mape": float(errors.mean()) if has_errors else np.nan, "median_ape": float(np.median(errors)) if has_errors else np.nan}


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per program, then an ``overall`` row over the programs' figures: mean τ (and its spread), mean and median
    top-K slowdowns, MAPE and median APE. Undefined figures (NaN) are skipped; ``graphs`` counts the graphs."""
    missing = [column for column in ("program", *FIGURES) if column not in table.columns]
    if missing:
        raise UserError(f"summary needs a score_table; column {missing[0]!r} is missing")
    if table.empty:
        raise UserError("summary needs a score_table of at least one graph; this one is empty")
    programs = pd.DataFrame({program: _aggregate(rows) for program, rows in table.groupby("program", sort=True)}).T
    overall = _aggregate(programs.rename(columns=_AS_SAMPLE)) | {"graphs": len(table)}
    result = pd.concat([programs, pd.DataFrame({"overall": overall}).T]).rename_axis("program")
    return result.astype({"graphs": int})


#: A program row's figure, read back as one sample of the overall row: every program weighs the same.
_AS_SAMPLE = {"tau_mean": "tau", "mape_mean": "mape", "median_ape_median": "median_ape", **{f"slowdown_{k}_mean": f"slowdown_{k}" for k in TOP_K}}


def _aggregate(rows: pd.DataFrame) -> dict[str, float]:
    figures: dict[str, float] = {"graphs": len(rows), "tau_mean": rows["tau"].mean(), "tau_sd": rows["tau"].std()}
    for k in TOP_K:
        figures |= {f"slowdown_{k}_mean": rows[f"slowdown_{k}"].mean(), f"slowdown_{k}_median": rows[f"slowdown_{k}"].median()}
    return figures | {"mape_mean": rows["mape"].mean(), "median_ape_median": rows["median_ape"].median()}
