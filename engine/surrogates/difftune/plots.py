"""The Simulator section's figures, drawn from data the workflows computed: a block's timeline (as
``llvm-mca -timeline`` prints it, one bar per instruction and iteration), predicted against true cycles on
log axes, and the distribution of the errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

#: One colour per predictor, stable across figures.
_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")


def _colours(names: list[str]) -> dict[str, str]:
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(sorted(names))}


def timeline_figure(timeline: pd.DataFrame) -> go.Figure:
    """Bars from dispatch to retire per instruction and iteration; markers where it issued and executed."""
    labels = [f"[{it},{i}] {asm}" for it, i, asm in zip(timeline["iteration"], timeline["index"], timeline["asm"])]
    figure = go.Figure()
    figure.add_bar(y=labels, x=timeline["retired"] - timeline["dispatched"] + 1, base=timeline["dispatched"],
                   orientation="h", name="dispatched → retired", marker_color="#c7d7ea",
                   hovertemplate="%{y}<br>dispatched %{base}, retired %{x}<extra></extra>")
    for column, symbol, colour in (("issued", "circle", "#4c78a8"), ("executed", "diamond", "#e45756")):
        figure.add_scatter(y=labels, x=timeline[column], mode="markers", name=column,
                           marker={"symbol": symbol, "size": 9, "color": colour})
    figure.update_layout(barmode="overlay", height=max(260, 26 * len(labels)), xaxis_title="cycle",
                         yaxis={"autorange": "reversed"}, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                         legend={"orientation": "h", "y": 1.08})
    return figure


def scatter_figure(predictions: pd.DataFrame) -> go.Figure:
    """Predicted against true cycles per 100 iterations, one colour per predictor, with the diagonal."""
    finite = predictions[(predictions["cycles"] > 0) & (predictions["truth"] > 0)]
    colours = _colours(list(finite["predictor"].unique()))
    figure = go.Figure()
    for name, part in finite.groupby("predictor", sort=True):
        figure.add_scattergl(x=part["truth"], y=part["cycles"], mode="markers", name=str(name), opacity=0.5,
                             marker={"size": 4, "color": colours[str(name)]}, text=part["hex"],
                             hovertemplate="%{text}<br>truth %{x:.4g}, predicted %{y:.4g}<extra></extra>")
    if len(finite):
        low, high = float(finite[["cycles", "truth"]].min().min()), float(finite[["cycles", "truth"]].max().max())
        figure.add_scatter(x=[low, high], y=[low, high], mode="lines", name="exact",
                           line={"color": "#888", "dash": "dash"})
    figure.update_layout(xaxis={"type": "log", "title": "true cycles per 100 iterations"},
                         yaxis={"type": "log", "title": "predicted"}, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return figure


def error_histogram(predictions: pd.DataFrame, cap: float = 1.0) -> go.Figure:
    """Relative errors (predicted − true) / true per predictor, clipped at ±``cap`` so the tails stay visible."""
    finite = predictions[(predictions["truth"] > 0) & np.isfinite(predictions["cycles"])]
    colours = _colours(list(finite["predictor"].unique()))
    figure = go.Figure()
    for name, part in finite.groupby("predictor", sort=True):
        error = ((part["cycles"] - part["truth"]) / part["truth"]).clip(-cap, cap)
        figure.add_histogram(x=error, name=str(name), opacity=0.6, nbinsx=80, marker_color=colours[str(name)])
    figure.update_layout(barmode="overlay", xaxis={"title": f"relative error (clipped at ±{cap:.0%})", "tickformat": ".0%"},
                         yaxis_title="blocks", margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return figure
