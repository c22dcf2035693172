"""The Analyze page's views of a fitted model: JMP's prediction profiler (a slider per factor) and
optuna-dashboard's exploration (history, importance, parallel coordinates, a pair's surface)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import LinearModel, plots
from engine.analysis.effects import natural_levels
from engine.analysis.exploration import importance, profile, surface


def profiler_panel(model: LinearModel, best: Mapping[str, Any], objective: str, key: str,
                   levels_of: Mapping[str, Sequence[Any]]) -> None:
    """A slider per model factor over its levels in the space (``levels_of``), opening at the proposal's
    predicted best ``best`` (the model's optimum): its star, its value and the caption's are the same point.
    The sliders are keyed by that point, so a new proposal opens the profiler at the new one."""
    opening = hashlib.sha1(json.dumps({f: best.get(f) for f in model.variables_}, sort_keys=True, default=str)
                           .encode()).hexdigest()[:10]
    levels_of = {f: list(levels_of[f]) if f in levels_of else natural_levels(model.data_[f]) for f in model.variables_}
    at: dict[str, Any] = {}
    grid = st.columns(min(4, max(len(model.variables_), 1)))
    for i, factor in enumerate(model.variables_):
        levels = levels_of[factor]
        start = best.get(factor)
        at[factor] = grid[i % len(grid)].select_slider(factor, levels, value=start if start in levels else levels[0],
                                                      key=f"{key}_{opening}_{factor}")
    data = profile(model, at, levels_of=levels_of)
    here = data[data["current"]].iloc[0]
    st.metric(f"Predicted {objective} here", f"{here['predicted']:.4g}",
              help=f"95% confidence interval {here['lower']:.4g} … {here['upper']:.4g}")
    st.plotly_chart(plots.profiler_figure(data, objective, dict(best)), width="stretch", key=f"{key}_figure")


def explore_panel(model: LinearModel, anova_table: pd.DataFrame, history: pd.DataFrame, data: pd.DataFrame,
                  best: Mapping[str, Any], pair: tuple[str, str] | None, objective: str, key: str) -> None:
    """History and importance side by side, then parallel coordinates and the surface of a pair."""
    left, right = st.columns(2)
    if len(history):
        left.plotly_chart(plots.history_figure(history, objective), width="stretch", key=f"{key}_history")
    right.plotly_chart(plots.importance_figure(importance(model, anova_table)), width="stretch",
                       key=f"{key}_importance")
    factors = [f for f in model.variables_ if f in data.columns]
    # Plotly draws parallel coordinates with WebGL: seconds per redraw in a browser without a GPU, so on request
    if st.toggle("Parallel coordinates of the measured configurations", key=f"{key}_parallel_on",
                 help="Drawn with WebGL, which takes seconds where the browser has no GPU."):
        st.plotly_chart(plots.parallel_figure(data, factors, objective), width="stretch", key=f"{key}_parallel")
    if pair is not None:
        chosen = st.multiselect("Surface of", factors, default=list(pair), max_selections=2, key=f"{key}_pair")
        if len(chosen) == 2:
            a, b = chosen
            st.plotly_chart(plots.surface_figure(surface(model, a, b, best), a, b, objective), width="stretch",
                            key=f"{key}_surface")
