"""The Design page's picture: chosen points over the cloud of candidates, as data then as a figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

#: Candidates drawn in the background cloud (more only slows the browser).
CLOUD_POINTS = 1_500


def scatter_matrix_data(candidates: pd.DataFrame, design: pd.DataFrame, factors: list[str],
                        seed: int = 0) -> pd.DataFrame:
    """Design rows and a sample of candidates in one frame with a ``role`` column."""
    cloud = candidates[factors]
    if len(cloud) > CLOUD_POINTS:
        cloud = cloud.sample(CLOUD_POINTS, random_state=np.random.RandomState(seed))
    return pd.concat([cloud.assign(role="candidate"), design[factors].assign(role="design")], ignore_index=True)


def scatter_matrix_figure(data: pd.DataFrame, factors: list[str]) -> go.Figure:
    plotted = data.copy()
    for name in factors:
        if plotted[name].dtype == bool:
            plotted[name] = plotted[name].astype(int)
    figure = px.scatter_matrix(plotted, dimensions=factors, color="role",
                               color_discrete_map={"candidate": "rgba(150,150,150,0.25)", "design": "#d62728"},
                               title="Chosen points (red) over the candidate configurations (grey)")
    figure.update_traces(diagonal_visible=False, marker={"size": 5})
    figure.update_layout(height=max(420, 110 * len(factors)), legend_title_text="")
    return figure
