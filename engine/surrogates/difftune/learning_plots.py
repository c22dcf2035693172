"""The DiffTune learning section's figures, drawn from data the workflows computed: how the surrogate's loss fell
while it trained, how each method's error fell while it searched, and which opcode fields a learnt table moved
away from the table it is compared with (and by how much).

Computing the data (:func:`table_changes`) is separate from drawing it, so the numbers are testable without a
figure and the page can offer them as a table too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from engine.surrogates.difftune.params import N_SLOTS, ParamTable

#: The fields every opcode row has (port columns follow, only those either table uses).
ROW_FIELDS = ("uops", "latency", *(f"ra{i}" for i in range(N_SLOTS)))
CHANGE_COLUMNS = ["key", "field", "start", "learned", "change"]
_PALETTE = qualitative.T10
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
#: Percent ticks with the digits they need (".0%" would print 3.5% and 4% both as "4%").
_PERCENT = ".2~%"


def table_changes(learned: ParamTable, start: ParamTable, top: int = 30) -> pd.DataFrame:
    """The ``top`` opcodes that moved most (total absolute change over their fields), most moved first, as tidy
    rows (key, field, start, learned, change = learned − start) over every row field and the port columns
    either table uses for them. Only opcodes of both tables count: a row one table lacks has nothing to compare."""
    new, old = learned.to_frame().set_index("key"), start.to_frame().set_index("key")
    keys = new.index.intersection(old.index)
    fields = list(dict.fromkeys([*new.columns, *old.columns]))
    new = new.reindex(index=keys, columns=fields, fill_value=0)
    old = old.reindex(index=keys, columns=fields, fill_value=0)
    moved = (new - old).abs().sum(axis=1).rename("moved").reset_index()
    moved = moved[moved["moved"] > 0].sort_values(["moved", "key"], ascending=[False, True]).head(top)
    rows = moved["key"].tolist()
    if not rows:
        return pd.DataFrame(columns=CHANGE_COLUMNS)
    shown = [f for f in fields if f in ROW_FIELDS or bool((new.loc[rows, f] != 0).any() or (old.loc[rows, f] != 0).any())]
    before, after = old.loc[rows, shown].to_numpy(), new.loc[rows, shown].to_numpy()
    return pd.DataFrame({"key": np.repeat(rows, len(shown)), "field": shown * len(rows), "start": before.ravel(),
                         "learned": after.ravel(), "change": (after - before).ravel()}, columns=CHANGE_COLUMNS)


def changes_heatmap(frame: pd.DataFrame) -> go.Figure:
    """Opcodes (most moved on top) × fields, coloured by the change with diverging colours centred at 0 (red: the
    learnt value is higher); hovering shows both values (compared → learnt)."""
    figure = go.Figure()
    if frame.empty:
        figure.add_annotation(text="No opcode row differs between the two tables.", showarrow=False,
                              xref="paper", yref="paper", x=0.5, y=0.5)
        figure.update_layout(height=200, xaxis_visible=False, yaxis_visible=False, margin=_MARGIN)
        return figure
    keys, fields = list(dict.fromkeys(frame["key"])), list(dict.fromkeys(frame["field"]))
    grid = {column: frame.pivot(index="key", columns="field", values=column).reindex(index=keys, columns=fields)
            for column in ("start", "learned", "change")}
    change = grid["change"].to_numpy(dtype=float)
    limit = max(1.0, float(np.abs(change).max()))
    figure.add_heatmap(z=change, x=fields, y=keys, colorscale="RdBu", reversescale=True, zmid=0, zmin=-limit, zmax=limit,
                       customdata=np.dstack([grid["start"].to_numpy(), grid["learned"].to_numpy()]), xgap=1, ygap=1,
                       colorbar={"title": {"text": "change"}},
                       hovertemplate="%{y} %{x}: %{customdata[0]} → %{customdata[1]} (%{z:+d})<extra></extra>")
    figure.update_layout(height=max(260, 22 * len(keys) + 120), yaxis={"autorange": "reversed", "type": "category"},
                         xaxis={"type": "category", "side": "top"}, margin=_MARGIN)
    return figure


def training_figure(history: pd.DataFrame) -> go.Figure:
    """The surrogate's training loss (MAPE on each batch), its moving average, and the validation MAPE at the end
    of each epoch, against the step."""
    figure = go.Figure()
    figure.add_scattergl(x=history["step"], y=history["loss"], mode="lines", name="loss (batch MAPE)",
                         line={"color": "#c7d7ea", "width": 1})
    figure.add_scattergl(x=history["step"], y=history["ema"], mode="lines", name="moving average",
                         line={"color": _PALETTE[0], "width": 2})
    val = history.dropna(subset=["val_mape"]) if "val_mape" in history else history.iloc[:0]
    figure.add_scatter(x=val["step"], y=val["val_mape"], mode="markers+lines", name="validation MAPE (per epoch)",
                       marker={"size": 9, "color": _PALETTE[1]}, text=val["epoch"] if "epoch" in val else None,
                       hovertemplate="epoch %{text}: validation MAPE %{y:.2%}<extra></extra>")
    figure.update_layout(xaxis_title="step", yaxis={"title": "MAPE", "tickformat": _PERCENT, "rangemode": "tozero"},
                         legend={"orientation": "h", "y": 1.12}, margin=_MARGIN)
    return figure


def search_curves_figure(curves: Mapping[str, pd.DataFrame | Sequence[Mapping[str, Any]]]) -> go.Figure:
    """Each method's learning curve. Left: DiffTune's surrogate loss per step, with the real simulator's MAPE
    on the validation blocks at each check (dotted; the best checked table is the one kept). Right: the
    simulator's MAPE on the training blocks against simulator calls for greedy and the strategies. One
    colour per method."""
    figure = make_subplots(rows=1, cols=2, subplot_titles=("DiffTune: surrogate loss and simulator validation",
                                                           "Searches: simulator MAPE vs simulator calls"))
    for i, (method, records) in enumerate(curves.items()):
        frame = pd.DataFrame(records)
        colour = _PALETTE[i % len(_PALETTE)]
        if {"step", "loss"} <= set(frame.columns):
            figure.add_scatter(x=frame["step"], y=frame["loss"], mode="lines", name=method, line={"color": colour},
                               row=1, col=1, connectgaps=True)
            if "val_mape" in frame.columns:
                checked = frame.dropna(subset=["val_mape"])
                figure.add_scatter(x=checked["step"], y=checked["val_mape"], mode="lines+markers",
                                   name=f"{method}: simulator, validation blocks", row=1, col=1,
                                   line={"color": colour, "dash": "dot"})
        elif {"calls", "mape"} <= set(frame.columns):
            figure.add_scatter(x=frame["calls"], y=frame["mape"], mode="lines", name=method, line={"color": colour},
                               row=1, col=2)
    figure.update_xaxes(title_text="step", row=1, col=1)
    figure.update_xaxes(title_text="simulator calls", row=1, col=2)
    figure.update_yaxes(tickformat=_PERCENT, rangemode="tozero")
    figure.update_layout(legend={"orientation": "h", "y": -0.2}, margin={**_MARGIN, "t": 60})
    return figure
