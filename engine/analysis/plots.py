"""Plotly figures drawn from the analysis *data* functions (never from a model directly).

Each function takes the DataFrame that a data function returns (``residual_diagnostics``,
``qq_data``, ``main_effects``, ``interaction_effects``, ``effect_screening``, a Box–Cox profile
curve) so the page can show, cache or export the numbers and the picture from one computation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.analysis.transform import PowerTransformResult


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", showlegend=False)
    return fig


def residuals_figure(diagnostics: pd.DataFrame) -> go.Figure:
    """Residuals against fitted values, with the zero line."""
    fig = go.Figure(go.Scatter(x=diagnostics["fitted"], y=diagnostics["residual"], mode="markers", text=diagnostics["row"]))
    fig.add_hline(y=0, line_dash="dot")
    return _layout(fig, "Residuals vs fitted", "Fitted values", "Residuals")


def qq_figure(qq: pd.DataFrame) -> go.Figure:
    """Normal QQ plot of standardised residuals with the identity line."""
    fig = go.Figure(go.Scatter(x=qq["theoretical"], y=qq["sample"], mode="markers", text=qq["row"]))
    ends = [float(np.nanmin(qq["theoretical"])), float(np.nanmax(qq["theoretical"]))] if len(qq) else [0.0, 0.0]
    fig.add_trace(go.Scatter(x=ends, y=ends, mode="lines", line={"dash": "dot"}))
    return _layout(fig, "Normal Q-Q", "Theoretical quantiles", "Standardized residuals")


def leverage_figure(diagnostics: pd.DataFrame) -> go.Figure:
    """Standardised residuals against leverage, marker size by Cook's distance."""
    cooks = diagnostics["cooks_distance"].fillna(0).to_numpy()
    size = 6 + 24 * cooks / cooks.max() if len(cooks) and cooks.max() > 0 else 8
    fig = go.Figure(
        go.Scatter(
            x=diagnostics["leverage"],
            y=diagnostics["std_residual"],
            mode="markers",
            marker={"size": size},
            text=[f"row {r}, Cook's D {c:.3g}" for r, c in zip(diagnostics["row"], cooks)],
        )
    )
    return _layout(fig, "Residuals vs leverage", "Leverage", "Standardized residuals")


def cooks_figure(diagnostics: pd.DataFrame) -> go.Figure:
    """Cook's distance per observation, with R's 4/n rule-of-thumb line."""
    fig = go.Figure(go.Bar(x=[str(r) for r in diagnostics["row"]], y=diagnostics["cooks_distance"]))
    if len(diagnostics):
        fig.add_hline(y=4.0 / len(diagnostics), line_dash="dot")
    return _layout(fig, "Cook's distance", "Observation", "Cook's distance")


def _error_y(part: pd.DataFrame) -> dict[str, Any]:
    return {"type": "data", "symmetric": False, "array": part["upper"] - part["predicted"],
            "arrayminus": part["predicted"] - part["lower"], "thickness": 1}


def main_effects_figure(effects: pd.DataFrame) -> go.Figure:
    """One panel per factor: the model-based mean response at each level (in natural order) with its
    95% confidence interval."""
    factors = list(dict.fromkeys(effects["factor"]))
    fig = make_subplots(rows=1, cols=max(len(factors), 1), shared_yaxes=True, subplot_titles=factors)
    for i, factor in enumerate(factors, start=1):
        part = effects[effects["factor"] == factor]
        levels = [str(v) for v in part["level"]]
        fig.add_trace(go.Scatter(x=levels, y=part["predicted"], error_y=_error_y(part), mode="lines+markers",
                                 name=factor, customdata=part["n"],
                                 hovertemplate="%{x}: %{y:.4g} (n = %{customdata})<extra></extra>"), row=1, col=i)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=levels, row=1, col=i)
    fig.update_layout(title="Main effects (model-based means, 95% CI)", template="plotly_white", showlegend=False)
    return fig


def interaction_figure(cells: pd.DataFrame) -> go.Figure:
    """Interaction plot: the model-based mean response against the levels of a (in natural order),
    one line per level of b."""
    fig = go.Figure()
    order = list(dict.fromkeys(str(v) for v in cells["level_a"]))
    for level_b in dict.fromkeys(cells["level_b"]):
        part = cells[cells["level_b"] == level_b]
        fig.add_trace(go.Scatter(x=[str(v) for v in part["level_a"]], y=part["predicted"], error_y=_error_y(part),
                                 mode="lines+markers", name=str(level_b)))
    a = cells["factor_a"].iloc[0] if len(cells) else "a"
    b = cells["factor_b"].iloc[0] if len(cells) else "b"
    fig = _layout(fig, f"Interaction {a} × {b} (model-based means, 95% CI)", a, "Mean response")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    fig.update_layout(showlegend=True, legend_title_text=b)
    return fig


def half_normal_figure(screening: pd.DataFrame) -> go.Figure:
    """Daniel's half-normal plot of absolute scaled estimates, labelled by term."""
    fig = go.Figure(
        go.Scatter(
            x=screening["half_normal_quantile"],
            y=screening["scaled_estimate"].abs(),
            mode="markers+text",
            text=screening["term"],
            textposition="top center",
        )
    )
    return _layout(fig, "Half-normal plot of scaled estimates", "Half-normal quantile", "|Scaled estimate|")


def boxcox_figure(profile: pd.DataFrame, power: PowerTransformResult | None = None) -> go.Figure:
    """Profile log-likelihood of λ, with λ̂ and its Wald interval when known."""
    fig = go.Figure(go.Scatter(x=profile["lambda"], y=profile["loglik"], mode="lines"))
    if power is not None:
        fig.add_vline(x=power.lambda_, line_dash="dash")
        fig.add_vrect(x0=power.wald_lower, x1=power.wald_upper, opacity=0.15, line_width=0)
    return _layout(fig, "Box-Cox profile log-likelihood", "lambda", "log-likelihood")


def profiler_figure(profile: pd.DataFrame, objective: str, best: dict[str, Any] | None = None) -> go.Figure:
    """JMP's prediction profiler: one panel per factor, the predicted response and its band as the
    factor moves; the current setting marked (red), the predicted best (a star) when given."""
    factors = list(dict.fromkeys(profile["factor"]))
    fig = make_subplots(rows=1, cols=max(len(factors), 1), shared_yaxes=True, subplot_titles=factors)
    for i, factor in enumerate(factors, start=1):
        part = profile[profile["factor"] == factor]
        levels = [str(v) for v in part["level"]]
        fig.add_trace(go.Scatter(x=levels, y=part["upper"], mode="lines", line={"width": 0}, hoverinfo="skip"),
                      row=1, col=i)
        fig.add_trace(go.Scatter(x=levels, y=part["lower"], mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor="rgba(76,120,168,0.2)", hoverinfo="skip"), row=1, col=i)
        fig.add_trace(go.Scatter(x=levels, y=part["predicted"], mode="lines+markers", line={"color": "#4c78a8"},
                                 hovertemplate=f"{factor} = %{{x}}: %{{y:.4g}}<extra></extra>"), row=1, col=i)
        now = part[part["current"]]
        fig.add_trace(go.Scatter(x=[str(v) for v in now["level"]], y=now["predicted"], mode="markers",
                                 marker={"color": "#e45756", "size": 11}, hoverinfo="skip"), row=1, col=i)
        if best is not None and factor in best:
            mark = part[[v == best[factor] for v in part["level"]]]
            fig.add_trace(go.Scatter(x=[str(v) for v in mark["level"]], y=mark["predicted"], mode="markers",
                                     marker={"symbol": "star", "size": 14, "color": "#f2b701"},
                                     hovertemplate="predicted best<extra></extra>"), row=1, col=i)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=levels, row=1, col=i)
    fig.update_layout(title=f"Prediction profiler: {objective} (95% CI; red = current, star = predicted best)",
                      template="plotly_white", showlegend=False)
    return fig


def importance_figure(importance: pd.DataFrame) -> go.Figure:
    """Horizontal bars: each factor's share of the explained variation."""
    fig = go.Figure(go.Bar(x=importance["share"], y=importance["factor"], orientation="h",
                           hovertemplate="%{y}: %{x:.1%}<extra></extra>"))
    fig = _layout(fig, "Importance (share of the explained sum of squares)", "share", "")
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickformat=".0%")
    return fig


def surface_figure(surface: pd.DataFrame, a: str, b: str, objective: str) -> go.Figure:
    """The predicted response over two factors as a heat map (levels in natural order)."""
    xs = list(dict.fromkeys(str(v) for v in surface[a]))
    ys = list(dict.fromkeys(str(v) for v in surface[b]))
    z = surface["predicted"].to_numpy().reshape(len(xs), len(ys)).T
    fig = go.Figure(go.Heatmap(x=xs, y=ys, z=z, colorbar={"title": objective},
                               hovertemplate=f"{a} = %{{x}}, {b} = %{{y}}: %{{z:.4g}}<extra></extra>"))
    fig = _layout(fig, f"Predicted {objective} over {a} × {b}", a, b)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def parallel_figure(frame: pd.DataFrame, factors: list[str], objective: str) -> go.Figure:
    """Parallel coordinates of the measured configurations (optuna-dashboard), coloured by the objective;
    text levels are drawn as their codes."""
    dimensions = []
    for factor in [*factors, objective]:
        column = frame[factor]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            dimensions.append({"label": factor, "values": column.astype(float)})
        else:
            codes, labels = pd.factorize(column.astype(str), sort=True)
            dimensions.append({"label": factor, "values": codes, "tickvals": list(range(len(labels))),
                               "ticktext": list(labels)})
    fig = go.Figure(go.Parcoords(line={"color": frame[objective].astype(float), "colorscale": "Viridis",
                                       "showscale": True}, dimensions=dimensions))
    fig.update_layout(title="Measured configurations (parallel coordinates)", template="plotly_white")
    return fig


def history_figure(history: pd.DataFrame, objective: str) -> go.Figure:
    """Every ok measurement in order and the best found so far (optuna-dashboard's history)."""
    fig = go.Figure([go.Scatter(x=history["order"], y=history["value"], mode="markers", name="measurement"),
                     go.Scatter(x=history["order"], y=history["best_so_far"], mode="lines", line={"shape": "hv"},
                                name="best so far")])
    fig = _layout(fig, f"History: {objective} by measurement", "measurement", objective)
    fig.update_layout(showlegend=True)
    return fig
