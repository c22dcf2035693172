"""The comparison's figures, each as a "compute the data" function and a "draw the figure" function.

Data functions take a comparison's runs (one row per run: ``strategy``, ``slowdown``,
``budget_used``, ``trace``) and return tidy DataFrames the Compare page can also show as tables;
figure functions only draw those frames with plotly. Every figure gives a strategy the same colour
(:func:`strategy_colours`) and its log axes round-number ticks (:func:`log_ticks`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # plotly is imported when a figure is drawn
    import plotly.graph_objects as go

#: chi-square(2) 95 % quantile: the squared Mahalanobis radius of a 95 % normal ellipse.
CHI2_2_95 = 5.991464547107979

#: One colour per strategy: Plotly's qualitative "Dark24", 24 distinct colours (the default cycle has
#: only 10, and each figure's hidden helper traces shift it, so strategies shared a colour).
PALETTE = (
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
    "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE",
    "#862A16", "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038",
)


def strategy_colours(strategies: Sequence[str]) -> dict[str, str]:
    """Strategy -> colour, by position in ``strategies``: pass the comparison's strategies to every
    figure so a strategy keeps its colour even in a figure where another one has nothing to show."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(dict.fromkeys(strategies))}


def _colours(data: pd.DataFrame, colours: Mapping[str, str] | None) -> Mapping[str, str]:
    return colours if colours is not None else strategy_colours(list(data["strategy"]))


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _nice_step(rough: float) -> float:
    """The 1, 2 or 5 × 10^k at or above ``rough``."""
    power = 10.0 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= rough * (1 - 1e-9))


def log_ticks(low: float, high: float, most: int = 10) -> list[float]:
    """Tick values for a log axis over [low, high] that read as plain numbers: 1, 2, 5, 10, 20 … on a
    wide range, evenly spaced round numbers (1, 1.1, 1.2 …) on a narrow one, never 10^0.3."""
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        return []
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    ticks: list[float] = []
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        ticks = [float(f"{m * 10.0 ** k:.12g}") for k in decades for m in mantissas if low <= m * 10.0 ** k <= high]
        if len(ticks) <= most:
            break
    if len(ticks) > most:
        ticks = ticks[:: math.ceil(len(ticks) / most)]
    if len(ticks) >= 3 or high == low:
        return ticks or [float(f"{low:.3g}")]
    step = _nice_step((high - low) / (most / 2))
    first = math.ceil(low / step - 1e-9)
    return [float(f"{i * step:.12g}") for i in range(first, math.floor(high / step + 1e-9) + 1)]


def _log_axis(values: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """A log axis over ``values`` with the ticks of :func:`log_ticks`, labelled as plain numbers."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array) & (array > 0)]
    ticks = log_ticks(float(array.min()), float(array.max())) if len(array) else []
    if not ticks:
        return {"type": "log"}
    return {"type": "log", "tickmode": "array", "tickvals": ticks, "ticktext": [f"{t:,.12g}" for t in ticks]}


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


def histogram_figure(data: pd.DataFrame, title: str = "Slowdown of the returned configuration",
                     colours: Mapping[str, str] | None = None) -> go.Figure:
    import plotly.graph_objects as go

    colour = _colours(data, colours)
    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        fig.add_bar(x=np.sqrt(part["left"] * part["right"]), y=part["fraction"], width=part["right"] - part["left"],
                    name=str(name), opacity=0.6, marker={"color": colour[str(name)]})
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


def ecdf_figure(data: pd.DataFrame, title: str = "ECDF of the slowdown", colours: Mapping[str, str] | None = None) -> go.Figure:
    import plotly.graph_objects as go

    colour = _colours(data, colours)
    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        fig.add_scatter(x=part["slowdown"], y=part["ecdf"], mode="lines", line_shape="hv", name=str(name),
                        line={"color": colour[str(name)]})
    fig.update_layout(title=title, xaxis_title="slowdown (× optimum)", yaxis_title="fraction of runs ≤ x",
                      xaxis=_log_axis(data["slowdown"]))
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


def best_so_far_figure(data: pd.DataFrame, title: str = "Best slowdown found so far",
                       colours: Mapping[str, str] | None = None) -> go.Figure:
    import plotly.graph_objects as go

    colour = _colours(data, colours)
    fig = go.Figure()
    for name, part in data.groupby("strategy", sort=False):
        part = part[np.isfinite(part["median"])]
        fig.add_scatter(x=part["measurements"], y=part["median"], mode="lines", name=str(name),
                        line={"color": colour[str(name)]}, legendgroup=str(name))
        fig.add_scatter(x=np.concatenate([part["measurements"], part["measurements"][::-1]]),
                        y=np.concatenate([part["q90"], part["q10"][::-1]]), fill="toself",
                        fillcolor=_rgba(colour[str(name)], 0.15), line={"width": 0, "color": colour[str(name)]},
                        showlegend=False, legendgroup=str(name), name=f"{name} 10-90 %", hoverinfo="skip")
    shown = data[np.isfinite(data["median"])]
    fig.update_layout(title=title, xaxis_title="measurements", yaxis_title="slowdown (median, 10-90 %)",
                      yaxis=_log_axis(np.concatenate([shown["q10"], shown["median"], shown["q90"]])))
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


def budget_slowdown_figure(scatter: pd.DataFrame, ellipses: pd.DataFrame, title: str = "Budget used vs slowdown",
                           colours: Mapping[str, str] | None = None) -> go.Figure:
    import plotly.graph_objects as go

    colour = _colours(scatter, colours)
    fig = go.Figure()
    for name, part in scatter.groupby("strategy", sort=False):
        fig.add_scatter(x=part["budget_used"], y=part["slowdown"], mode="markers", name=str(name),
                        marker={"size": 4, "opacity": 0.35, "color": colour[str(name)]}, legendgroup=str(name))
        ring = ellipses[ellipses["strategy"] == name]
        if len(ring):
            fig.add_scatter(x=ring["budget_used"], y=ring["slowdown"], mode="lines", name=f"{name} 95 %",
                            line={"color": colour[str(name)]}, legendgroup=str(name), showlegend=False)
    fig.update_layout(title=title, xaxis_title="measurements used", yaxis_title="slowdown (× optimum)")
    return fig
