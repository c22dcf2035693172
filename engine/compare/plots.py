"""The comparison's figures, each as a "compute the data" function and a "draw the figure" function.

Data functions take a comparison's runs (one row per run: ``strategy``, ``slowdown``,
``budget_used``, ``trace``) and return tidy DataFrames the Compare page can also show as tables;
figure functions only draw those frames with plotly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # plotly is imported when a figure is drawn
    import plotly.graph_objects as go

#: chi-square(2) 95 % quantile: the squared Mahalanobis radius of a 95 % normal ellipse.
CHI2_2_95 = 5.991464547107979


def _strategies(runs: pd.DataFrame, strategies: Sequence[str] | None) -> list[str]:
    return list(strategies) if strategies is not None else list(dict.fromkeys(runs["strategy"]))


def histogram_data(runs: pd.DataFrame, bins: int = 30, strategies: Sequence[str] | None = None, log: bool = True) -> pd.DataFrame:
    """Slowdown histogram per strategy on shared bins (log-spaced by default: slowdowns are ratios)."""
    finite = runs[np.isfinite(runs["slowdown"].astype(float))]
    if finite.empty:
        return pd.DataFrame(columns=["strategy", "left", "right", "count", "fraction"])
    low, high = float(finite["slowdown"].min()), float(finite["slowdown"].max())
    high = high if high > low else low * 1.001 + 1e-12
    edges = np.geomspace(low, high, bins + 1) if log and low > 0 else np.linspace(low, high, bins + 1)
    rows = []
    for name in _strategies(runs, strategies):
        values = finite.loc[finite["strategy"] == name, "slowdown"].to_numpy(dtype=float)
        counts, _ = np.histogram(values, edges)
        for left, right, count in zip(edges[:-1], edges[1:], counts):
            rows.append((name, left, right, int(count), count / max(len(values), 1)))
    return pd.DataFrame(rows, columns=["strategy", "left", "right", "count", "fraction"])


def histogram_figure(data: pd.DataFrame, title: str = "Slowdown of the returned configuration") -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        fig.add_bar(x=np.sqrt(part["left"] * part["right"]), y=part["fraction"], width=part["right"] - part["left"],
                    name=str(name), opacity=0.6)
    fig.update_layout(barmode="overlay", title=title, xaxis_title="slowdown (× optimum)", yaxis_title="fraction of runs")
    return fig


def ecdf_data(runs: pd.DataFrame, strategies: Sequence[str] | None = None) -> pd.DataFrame:
    """Empirical CDF of the slowdown per strategy (infinite slowdowns, i.e. nothing found, excluded)."""
    rows = []
    for name in _strategies(runs, strategies):
        values = np.sort(runs.loc[runs["strategy"] == name, "slowdown"].to_numpy(dtype=float))
        n = len(values)
        values = values[np.isfinite(values)]
        rows += [(name, v, (i + 1) / n) for i, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["strategy", "slowdown", "ecdf"])


def ecdf_figure(data: pd.DataFrame, title: str = "ECDF of the slowdown") -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        fig.add_scatter(x=part["slowdown"], y=part["ecdf"], mode="lines", line_shape="hv", name=str(name))
    fig.update_layout(title=title, xaxis_title="slowdown (× optimum)", yaxis_title="fraction of runs ≤ x", xaxis_type="log")
    return fig


def best_so_far_data(runs: pd.DataFrame, strategies: Sequence[str] | None = None, budget: int | None = None) -> pd.DataFrame:
    """Best-so-far slowdown after m measurements: median and 10 %/90 % quantiles over runs, per
    strategy (a run that stopped early keeps its last value; before its first success it is inf)."""
    rows = []
    for name in _strategies(runs, strategies):
        traces = [np.asarray(t, dtype=float) for t in runs.loc[runs["strategy"] == name, "trace"]]
        traces = [t for t in traces if len(t)]
        if not traces:
            continue
        length = budget or max(len(t) for t in traces)
        grid = np.full((len(traces), length), np.inf)
        for i, t in enumerate(traces):
            t = t[:length]
            grid[i, : len(t)] = t
            grid[i, len(t):] = t[-1]
        for m in range(length):
            column = grid[:, m]
            q10, q50, q90 = np.quantile(column, [0.1, 0.5, 0.9]) if np.isfinite(column).any() else (math.inf,) * 3
            finite = column[np.isfinite(column)]
            rows.append((name, m + 1, float(finite.mean()) if len(finite) == len(column) else math.inf, q50, q10, q90))
    return pd.DataFrame(rows, columns=["strategy", "measurements", "mean", "median", "q10", "q90"])


def best_so_far_figure(data: pd.DataFrame, title: str = "Best slowdown found so far") -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        part = part[np.isfinite(part["median"])]
        fig.add_scatter(x=part["measurements"], y=part["median"], mode="lines", name=str(name))
        fig.add_scatter(x=np.concatenate([part["measurements"], part["measurements"][::-1]]),
                        y=np.concatenate([part["q90"], part["q10"][::-1]]), fill="toself", opacity=0.15,
                        line={"width": 0}, showlegend=False, name=f"{name} 10-90 %", hoverinfo="skip")
    fig.update_layout(title=title, xaxis_title="measurements", yaxis_title="slowdown (median, 10-90 %)", yaxis_type="log")
    return fig


def budget_slowdown_data(runs: pd.DataFrame, strategies: Sequence[str] | None = None,
                         points: int = 64) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run (budget used, slowdown) points, and per strategy the 95 % normal ellipse of those
    points (mean ± the covariance scaled by the chi-square(2) 95 % quantile) as a closed polygon."""
    names = _strategies(runs, strategies)
    scatter = runs.loc[runs["strategy"].isin(names) & np.isfinite(runs["slowdown"].astype(float)),
                       ["strategy", "rep", "budget_used", "slowdown"]].reset_index(drop=True)
    angle = np.linspace(0.0, 2.0 * math.pi, points)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    rows = []
    for name in names:
        part = scatter[scatter["strategy"] == name]
        if len(part) < 3:
            continue
        xy = part[["budget_used", "slowdown"]].to_numpy(dtype=float)
        cov = np.cov(xy, rowvar=False)
        values, vectors = np.linalg.eigh(cov)
        shape = vectors @ np.diag(np.sqrt(np.maximum(values, 0.0) * CHI2_2_95)) @ circle
        centre = xy.mean(axis=0)
        rows += [(name, centre[0] + dx, centre[1] + dy) for dx, dy in shape.T]
    return scatter, pd.DataFrame(rows, columns=["strategy", "budget_used", "slowdown"])


def budget_slowdown_figure(scatter: pd.DataFrame, ellipses: pd.DataFrame, title: str = "Budget used vs slowdown") -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, part in scatter.groupby("strategy", sort=False):
        fig.add_scatter(x=part["budget_used"], y=part["slowdown"], mode="markers", name=str(name),
                        marker={"size": 4, "opacity": 0.35}, legendgroup=str(name))
        ring = ellipses[ellipses["strategy"] == name]
        if len(ring):
            fig.add_scatter(x=ring["budget_used"], y=ring["slowdown"], mode="lines", name=f"{name} 95 %",
                            legendgroup=str(name), showlegend=False)
    fig.update_layout(title=title, xaxis_title="measurements used", yaxis_title="slowdown (× optimum)")
    return fig
