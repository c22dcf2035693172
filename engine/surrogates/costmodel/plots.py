"""The Cost model section's tables and figures (costmodel.md §7 "Dashboard"), drawn from what an evaluation stored:
predicted against measured per configuration, one kernel's configurations in the order a model ranks them, top-K
slowdown curves, the baselines table with its noise floor, and a picture of one kernel's graph.

Computing the data (the ``*_data``, ``*_table`` and :func:`graph_layout` functions, pure pandas/numpy) is separate
from drawing it (the ``*_figure`` functions and :func:`graph_picture`, plotly), so the numbers are testable without a
figure.

**Scores have no unit.** On the tile and layout tasks a model's prediction is a ranking score (higher = slower), only
comparable between configurations of the *same* graph; so the scatter and the rank plot put each configuration at
its *predicted rank within its graph* (1 = the model's pick) and its measured runtime relative to the graph's best
(1.0 = the fastest measured configuration). Only on the absolute task, whose predictions are runtimes in ns, is the
scatter predicted ns against measured ns with the diagonal.

Ranks follow the metrics (:mod:`engine.surrogates.costmodel.metrics`): error runs (NaN runtime) are left out, and
tied scores share the lowest rank of their group ("min" ranking), since the model cannot tell them apart. So a
top-K mark (rank ≤ K) covers a whole tied group that straddles K, where the top-K metric credits the expected value
of a random pick inside it. The stored predictions carry no TpuGraphs normalizer: "relative runtime" here is runtime
÷ the graph's best runtime, which is what the metrics rank by whenever the data has no normalizer (the real TPU
kernels and Tunelab's own files).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from engine.errors import UserError, brief
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import TOP_K, topk_slowdown

#: Tasks whose predictions are ranking scores (the others are runtimes in ns).
RANKING_TASKS = ("tile", "layout")
#: One colour per model, stable across figures (models in :data:`engine.surrogates.costmodel.evaluate.MODELS` order).
MODEL_COLOURS = {"gnn": "#4c78a8", "gbdt": "#f58518", "heuristic": "#54a24b", "roofline": "#b279a2", "default": "#e45756"}


def _light(colour: str) -> bool:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.299 * red + 0.587 * green + 0.114 * blue > 200


#: Distinct colours for opcodes and graphs, none too pale to see on white (about 45 before they repeat).
_PALETTE = tuple(dict.fromkeys(c.lower() for c in (*qualitative.Dark24, *qualitative.Alphabet) if not _light(c)))
_EXTRA_COLOURS = ("#72b7b2", "#9d755d", "#bab0ac", "#eeca3b")
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
#: Graphs the scatter gives a colour and a legend entry each; beyond, one colour and the graph in the hover.
_LEGEND_GRAPHS = 24
#: Points from which a figure switches to WebGL traces.
_WEBGL = 3000
#: XLA's ``PrimitiveType`` numbers (xla_data.proto), the ``element_type`` node feature of the converted files.
ELEMENT_TYPES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64", 10: "f16",
                 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token", 18: "c128"}
PREDICTION_COLUMNS = ("model", "seed", "graph", "config", "runtime", "prediction")


def model_colour(model: str, models: Sequence[str] = ()) -> str:
    """A model's colour: its own for a known name, else one picked by its position among ``models``."""
    if model in MODEL_COLOURS:
        return MODEL_COLOURS[model]
    position = list(models).index(model) if model in models else len(model)
    return _EXTRA_COLOURS[position % len(_EXTRA_COLOURS)]


def _check(predictions: pd.DataFrame) -> None:
    missing = [c for c in PREDICTION_COLUMNS if c not in predictions.columns]
    if missing:
        raise UserError(f"predictions: no column {missing[0]!r}")


def _ranked(rows: pd.DataFrame) -> pd.DataFrame:
    """The valid runs of ``rows`` (one or more graphs of one model and seed) with their predicted rank inside their
    graph ("min" ranks, 1 = predicted fastest), that rank as a fraction (0 = first, 1 = last) and the runtime
    relative to the graph's best."""
    valid = rows[np.isfinite(rows["runtime"]) & (rows["runtime"] > 0)].copy()
    by_graph = valid.groupby(["seed", "graph"], sort=False)
    valid["rank"] = by_graph["prediction"].rank(method="min").astype(int)
    last = by_graph["rank"].transform("max")
    valid["rank_fraction"] = np.where(last > 1, (valid["rank"] - 1) / (last - 1).clip(lower=1), 0.0)
    valid["relative_runtime"] = valid["runtime"] / by_graph["runtime"].transform("min")
    return valid


def scatter_data(predictions: pd.DataFrame, model: str, *, seed: int | None = None) -> pd.DataFrame:
    """One row per valid configuration of ``model`` (one ``seed``, or every seed when None: each configuration once
    per seed): graph, program, seed, config, runtime (ns), prediction, rank (predicted, within its graph, 1 = the
    model's pick), rank_fraction ((rank − 1) ÷ (last rank − 1), so kernels of different sizes share an axis) and
    relative_runtime (runtime ÷ the graph's best measured runtime). :func:`scatter_figure` draws rank_fraction
    against relative_runtime for a ranking task, prediction against runtime for an absolute one."""
    _check(predictions)
    rows = predictions[predictions["model"] == model]
    if seed is not None:
        rows = rows[rows["seed"] == int(seed)]
    if rows.empty:
        raise UserError(f"predictions: none of model {brief(model)}" + ("" if seed is None else f" with seed {seed}"))
    columns = ["graph", "program", "seed", "config", "runtime", "prediction", "rank", "rank_fraction", "relative_runtime"]
    ranked = _ranked(rows.assign(program=rows["program"] if "program" in rows else rows["graph"]))
    return ranked[columns].sort_values(["graph", "seed", "rank", "config"], ignore_index=True)


def scatter_figure(data: pd.DataFrame, *, task: str = "tile", noise: Mapping[str, float] | None = None,
                   title: str | None = None) -> go.Figure:
    """:func:`scatter_data` as points, one colour per graph (up to 24 graphs). Ranking task: x = predicted rank within
    the graph (0 = the model's pick, 1 = its last), y = measured runtime ÷ the graph's best, log scale, with the noise
    floor as a band above 1.0 (runs inside it are as good as the best, as far as measurement can tell). Absolute
    task: predicted against measured ns on log axes, with the diagonal."""
    ranking = task in RANKING_TASKS
    x, y = ("rank_fraction", "relative_runtime") if ranking else ("prediction", "runtime")
    figure = go.Figure()
    graphs = list(dict.fromkeys(data["graph"]))
    trace = go.Scattergl if len(data) > _WEBGL else go.Scatter
    hover = ("%{text}<br>predicted rank %{customdata[0]} (%{x:.2f} of the way down)<br>measured %{y:.3f} × the best"
             if ranking else "%{text}<br>predicted %{x:.4g} ns, measured %{y:.4g} ns") + "<br>seed %{customdata[1]}<extra></extra>"
    groups = data.groupby("graph", sort=False) if len(graphs) <= _LEGEND_GRAPHS else [("configurations", data)]
    for i, (name, part) in enumerate(groups):
        text = [f"{g}, config {c}" for g, c in zip(part["graph"], part["config"])]
        figure.add_trace(trace(x=part[x], y=part[y], mode="markers", name=str(name), text=text, opacity=0.7,
                               customdata=np.column_stack([part["rank"], part["seed"]]), hovertemplate=hover,
                               marker={"size": 6, "color": _PALETTE[i % len(_PALETTE)]}))
    if ranking:
        _noise_band(figure, 1.0, noise, log=True)
        figure.update_layout(xaxis={"title": "predicted rank within the kernel (0 = the model's pick, 1 = its last)",
                                    "range": [-0.03, 1.03]},
                             yaxis={"title": "measured runtime ÷ the kernel's best", "type": "log"})
    else:
        if len(data):
            low, high = float(data[[x, y]].min().min()), float(data[[x, y]].max().max())
            figure.add_scatter(x=[low, high], y=[low, high], mode="lines", name="exact", line={"color": "#888", "dash": "dash"})
        figure.update_layout(xaxis={"title": "predicted runtime (ns)", "type": "log"},
                             yaxis={"title": "measured runtime (ns)", "type": "log"})
    figure.update_layout(title=title, margin=_MARGIN, height=460)
    return figure


def _noise_band(figure: go.Figure, best: float, noise: Mapping[str, float] | None, *, log: bool) -> None:
    """A band from ``best`` up to ``best`` × exp(median |log ratio| of repeated measurements), labelled (by hand: a
    shape's own label lands at the raw value on a log axis, which wants its logarithm)."""
    if not noise or not noise.get("median_log_ratio"):
        return
    top = best * float(np.exp(noise["median_log_ratio"]))
    figure.add_hrect(y0=best, y1=top, fillcolor="#bbbbbb", opacity=0.35, line_width=0, layer="below")
    figure.add_annotation(xref="paper", x=1, y=float(np.log10(top)) if log else top, xanchor="right", yanchor="bottom",
                          text="noise floor", showarrow=False, font={"size": 10, "color": "#666"})


def rank_data(predictions: pd.DataFrame, model: str | Sequence[str], graph: str, seed: int) -> pd.DataFrame:
    """One kernel's valid configurations as each of ``model`` (a name or several) ranks them with ``seed``: model,
    config, prediction, rank (1 = the model's pick; tied scores share the lowest rank), runtime (ns),
    relative_runtime (÷ the best measured), best (the fastest measured configuration; ties all marked), top_1 and
    top_5 (rank ≤ 1, rank ≤ 5). Sorted by model (in the order given), then rank."""
    _check(predictions)
    models = [model] if isinstance(model, str) else list(dict.fromkeys(model))
    if not models:
        raise UserError("models: name at least one")
    rows = predictions[(predictions["graph"] == graph) & (predictions["seed"] == int(seed))]
    parts = []
    for name in models:
        mine = rows[rows["model"] == name]
        if mine.empty:
            raise UserError(f"predictions: model {brief(name)} has none for graph {brief(graph)} with seed {seed}")
        parts.append(_ranked(mine))
    ranked = pd.concat(parts, ignore_index=True)
    ranked["best"] = ranked["runtime"] == ranked["runtime"].min()
    for k in (1, 5):
        ranked[f"top_{k}"] = ranked["rank"] <= k
    order = {name: i for i, name in enumerate(models)}
    ranked = ranked.sort_values(["model", "rank", "config"], key=lambda c: c.map(order) if c.name == "model" else c)
    columns = ["model", "config", "prediction", "rank", "runtime", "relative_runtime", "best", "top_1", "top_5"]
    return ranked[columns].reset_index(drop=True)


def rank_figure(data: pd.DataFrame, *, noise: Mapping[str, float] | None = None, title: str | None = None) -> go.Figure:
    """:func:`rank_data` as one line per model: x = predicted rank, y = measured runtime (log). The fastest measured
    configuration is a star on each model's line (and a dotted line across), each model's top-1 pick an open diamond,
    the top 5 ranks a shaded column; the noise floor is a band above the best runtime. A perfect ranking climbs
    steadily from the star at rank 1."""
    figure = go.Figure()
    models = list(dict.fromkeys(data["model"]))
    for name, part in data.groupby("model", sort=False):
        colour = model_colour(str(name), models)
        figure.add_scatter(x=part["rank"], y=part["runtime"], mode="lines+markers", name=str(name), legendgroup=str(name),
                           line={"color": colour, "width": 1}, marker={"size": 6, "color": colour},
                           customdata=np.column_stack([part["config"], part["relative_runtime"]]),
                           hovertemplate=f"{name}: config %{{customdata[0]}}<br>predicted rank %{{x}}<br>"
                                         "measured %{y:.4g} ns (%{customdata[1]:.3f} × the best)<extra></extra>")
        for flag, label, symbol in (("top_1", "top-1 pick", "diamond-open"), ("best", "best measured", "star")):
            marked = part[part[flag]]
            figure.add_scatter(x=marked["rank"], y=marked["runtime"], mode="markers", name=f"{name}: {label}",
                               legendgroup=str(name), showlegend=True, hoverinfo="skip",
                               marker={"symbol": symbol, "size": 15 if flag == "top_1" else 13, "color": colour,
                                       "line": {"width": 2, "color": colour}})
    if len(data):
        best = float(data["runtime"].min())
        figure.add_vrect(x0=0.5, x1=5.5, fillcolor="#4c78a8", opacity=0.07, line_width=0, layer="below",
                         annotation_text="top 5", annotation_position="top left")
        figure.add_hline(y=best, line={"color": "#888", "dash": "dot", "width": 1})
        _noise_band(figure, best, noise, log=True)
    figure.update_layout(title=title, margin=_MARGIN, height=460,
                         xaxis={"title": "predicted rank (1 = the model's pick)", "rangemode": "tozero"},
                         yaxis={"title": "measured runtime (ns)", "type": "log"})
    return figure


def topk_data(predictions: pd.DataFrame, ks: Sequence[int] = tuple(range(1, 21)),
              models: Sequence[str] | None = None) -> pd.DataFrame:
    """Top-K slowdown curves, one row per model and K: the best measured runtime among a model's K best-scored
    configurations ÷ the best, aggregated as the baselines table does (mean over a program's kernels, median over
    programs, mean over seeds), so the curve passes through the table's top-1/5/10 columns. ``models`` picks and
    orders the models (default: all, in the order of the predictions)."""
    _check(predictions)
    valid = predictions[np.isfinite(predictions["runtime"]) & (predictions["runtime"] > 0)]
    if models is not None:
        order = {name: i for i, name in enumerate(dict.fromkeys(models))}
        valid = valid[valid["model"].isin(list(order))]
        valid = valid.iloc[np.argsort(valid["model"].map(order).to_numpy(), kind="stable")]
    if "program" not in valid:
        valid = valid.assign(program=valid["graph"])
    rows = []
    for (model, seed, _, program), part in valid.groupby(["model", "seed", "graph", "program"], sort=False):
        scores, runtimes = part["prediction"].to_numpy(float), part["runtime"].to_numpy(float)
        rows += [(model, seed, program, k, topk_slowdown(scores, runtimes, int(k))) for k in ks]
    frame = pd.DataFrame(rows, columns=["model", "seed", "program", "k", "slowdown"])
    per_program = frame.groupby(["model", "seed", "program", "k"], sort=False)["slowdown"].mean()
    per_seed = per_program.groupby(["model", "seed", "k"], sort=False).median()
    return per_seed.groupby(["model", "k"], sort=False).mean().reset_index()


def topk_figure(data: pd.DataFrame, *, noise: Mapping[str, float] | None = None) -> go.Figure:
    """:func:`topk_data` as one line per model against K; 1.0 means the shortlist holds the fastest configuration."""
    figure = go.Figure()
    models = list(dict.fromkeys(data["model"]))
    for name, part in data.groupby("model", sort=False):
        figure.add_scatter(x=part["k"], y=part["slowdown"], mode="lines+markers", name=str(name),
                           line={"color": model_colour(str(name), models)},
                           hovertemplate=f"{name}: top-%{{x}} slowdown %{{y:.3f}}<extra></extra>")
    _noise_band(figure, 1.0, noise, log=False)
    figure.update_layout(margin=_MARGIN, height=360, xaxis={"title": "K (configurations the model shortlists)", "dtick": 1},
                         yaxis={"title": "top-K slowdown (median)"})
    return figure


# -- tables ---------------------------------------------------------------------------------------------------

#: The summary's per-model columns and how the table names them.
MODEL_COLUMNS = {"model": "model", "graphs": "graphs", "tau": "τ (mean)", "tau_seed_sd": "τ sd over seeds",
                 **{f"slowdown_{k}": f"top-{k} slowdown (median)" for k in TOP_K}, "mape": "MAPE", "median_ape": "median APE"}
#: Columns left out when no model has a value: the ranking tasks have no APE; one configuration per graph (the
#: absolute task) has no τ and no slowdown.
_OPTIONAL = ("tau", "tau_seed_sd", *(f"slowdown_{k}" for k in TOP_K), "mape", "median_ape")


def models_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The baselines table of an evaluation's ``summary``: one row per model (in the order they were asked) with
    graphs, mean τ and its spread over seeds, the median top-1/5/10 slowdowns (1.0 = the best configuration), MAPE
    and median APE when a model has one, and the CPU seconds spent fitting and predicting."""
    frame = pd.DataFrame(list(summary.get("models") or []))
    if frame.empty:
        return pd.DataFrame(columns=[*MODEL_COLUMNS.values(), "CPU s"])
    frame = frame.reindex(columns=list(MODEL_COLUMNS))
    for column in MODEL_COLUMNS:
        if column != "model":
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    keep = [c for c in MODEL_COLUMNS if c not in _OPTIONAL or frame[c].notna().any()]
    table = frame[keep].rename(columns=MODEL_COLUMNS)
    seconds = summary.get("seconds") or {}
    table["CPU s"] = [float(seconds[m]) if seconds.get(m) is not None else np.nan for m in frame["model"]]
    return table


#: The per-graph score columns and how the table names them.
SCORE_COLUMNS = {"graph": "graph", "program": "program", "model": "model", "seed": "seed", "fold": "fold",
                 "n_configs": "configurations", "tau": "τ", **{f"slowdown_{k}": f"top-{k} slowdown" for k in TOP_K},
                 "mape": "MAPE", "median_ape": "median APE"}


def scores_table(summary: Mapping[str, Any], seed: int | None = None) -> pd.DataFrame:
    """The per-graph scores of an evaluation (every model, seed and fold, or one ``seed``), readable names, graphs in
    name order; APE columns only when some graph has one."""
    frame = pd.DataFrame(list(summary.get("scores") or [])).reindex(columns=list(SCORE_COLUMNS))
    if seed is not None:
        frame = frame[frame["seed"] == int(seed)]
    keep = [c for c in SCORE_COLUMNS if c not in _OPTIONAL or pd.to_numeric(frame[c], errors="coerce").notna().any()]
    return frame[keep].sort_values(["graph", "model", "seed"], kind="stable").rename(columns=SCORE_COLUMNS).reset_index(drop=True)


def trained_table(models: pd.DataFrame) -> pd.DataFrame:
    """Trained models (``workflows.costmodel.trained_models``) as name, data, task, epochs, hidden, join, graphs,
    CPU minutes, folder and when."""
    columns = ["name", "data", "task", "epochs", "hidden", "join", "graphs", "CPU min", "folder", "created_at"]
    if models.empty:
        return pd.DataFrame(columns=columns)
    params = [p if isinstance(p, Mapping) else {} for p in models["params"]]
    summaries = [s if isinstance(s, Mapping) else {} for s in models["summary"]]
    return pd.DataFrame({"name": models["name"], "data": models["data"], "task": models["task"],
                         "epochs": [p.get("epochs") for p in params], "hidden": [p.get("hidden") for p in params],
                         "join": [p.get("join") for p in params], "graphs": [s.get("graphs") for s in summaries],
                         "CPU min": models["seconds"].astype(float) / 60, "folder": models["folder"],
                         "created_at": models["created_at"]}, columns=columns)


# -- the graph of a kernel --------------------------------------------------------------------------------------


def node_depths(edges: np.ndarray, n: int) -> np.ndarray:
    """Longest-path depth of every node over the data flow: an operand comes before its users (edge ``[u, v]``:
    u consumes v, so depth[u] ≥ depth[v] + 1); nodes that consume nothing are at depth 0. Kahn's algorithm, O(n + m).
    A node on a cycle (no HLO graph has one) lands one column after the deepest node."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[edges[:, 0] != edges[:, 1]]
    users, operands = edges[:, 0], edges[:, 1]
    waiting = np.bincount(users, minlength=n)
    order = np.argsort(operands, kind="stable")
    starts = np.searchsorted(operands[order], np.arange(n + 1))
    by_operand = users[order]
    depth = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    queue = deque(int(i) for i in np.flatnonzero(waiting == 0))
    while queue:
        node = queue.popleft()
        done[node] = True
        for user in by_operand[starts[node]:starts[node + 1]]:
            depth[user] = max(depth[user], depth[node] + 1)
            waiting[user] -= 1
            if waiting[user] == 0:
                queue.append(int(user))
    if not done.all():
        depth[~done] = (depth[done].max() + 1) if done.any() else 0
    return depth


def computation_of(graph: TensorGraph) -> np.ndarray:
    """The computation (index into ``node_splits``) each node belongs to; 0 for all without splits."""
    n = len(graph.opcodes)
    if not len(graph.node_splits):
        return np.zeros(n, dtype=np.int64)
    index: np.ndarray = np.searchsorted(np.asarray(graph.node_splits), np.arange(n), side="right") - 1
    return index


def shape_text(graph: TensorGraph, node: int) -> str:
    """A node's output as HLO prints it (``f32[32,12,12,192]``, ``tuple of 2``), from the ``element_type`` and
    ``dim_0``…``dim_5`` features of the converted files; empty when the features are unnamed (TpuGraphs' f000…)."""
    features = dict(zip(graph.feat_names, graph.node_feat[node].tolist()))
    kind = features.get("element_type")
    name = ELEMENT_TYPES.get(int(kind), f"type {int(kind)}") if kind is not None else ""
    if features.get("tuple_size", 0) > 0 or name == "tuple":
        return f"tuple of {int(features.get('tuple_size', 0))}"
    dims = [features.get(f"dim_{i}") for i in range(6)]
    if dims[0] is None:
        return name
    shown = []
    for dim in dims:
        if not dim:
            break
        shown.append(str(int(dim)))
    return f"{name}[{','.join(shown)}]"


def graph_layout(graph: TensorGraph) -> pd.DataFrame:
    """Where :func:`graph_picture` puts each node: x = its depth (:func:`node_depths`), y = its slot in a horizontal
    band per computation (computation 0 on top; nodes of one band and depth stacked, centred in the band), with
    node, opcode, computation, depth, shape and root (the feature ``is_root`` when there is one)."""
    n = len(graph.opcodes)
    depth = node_depths(graph.edges, n)
    computation = computation_of(graph)
    frame = pd.DataFrame({"node": np.arange(n), "opcode": [str(o) for o in graph.opcodes], "computation": computation,
                          "depth": depth})
    frame["slot"] = frame.groupby(["computation", "depth"]).cumcount()
    count = frame.groupby(["computation", "depth"])["node"].transform("size")
    height = frame.groupby("computation")["slot"].max() + 1
    offset = (height + 1).cumsum().shift(fill_value=0)
    frame["x"] = depth.astype(float)
    frame["y"] = -(frame["computation"].map(offset) + frame["slot"] + (frame["computation"].map(height) - count) / 2)
    frame["shape"] = [shape_text(graph, i) for i in range(n)]
    roots = graph.node_feat[:, graph.feat_names.index("is_root")] > 0 if "is_root" in graph.feat_names else np.zeros(n, bool)
    frame["root"] = roots
    return frame


def opcode_colours(opcodes: Sequence[str] | np.ndarray) -> dict[str, str]:
    """One colour per distinct opcode, in name order (distinct for up to 50 opcodes, then repeating)."""
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(sorted({str(o) for o in opcodes}))}


def graph_picture(graph: TensorGraph) -> go.Figure:
    """One kernel's graph: nodes at (:func:`graph_layout`), one colour and legend entry per opcode, edges as grey
    lines from operand to user (left to right), roots ringed, configurable nodes (layout) squared; hovering a node
    shows its opcode, shape, computation and depth."""
    layout = graph_layout(graph)
    figure = go.Figure()
    x, y = layout["x"].to_numpy(), layout["y"].to_numpy()
    if len(graph.edges):
        users, operands = graph.edges[:, 0], graph.edges[:, 1]
        xs = np.column_stack([x[operands], x[users], np.full(len(users), np.nan)]).ravel()
        ys = np.column_stack([y[operands], y[users], np.full(len(users), np.nan)]).ravel()
        figure.add_scatter(x=xs, y=ys, mode="lines", name="data flow", hoverinfo="skip",
                           line={"color": "#b0b0b0", "width": 1}, showlegend=False)
    trace = go.Scattergl if len(layout) > _WEBGL else go.Scatter
    colours = opcode_colours(layout["opcode"])
    for opcode, part in layout.groupby("opcode", sort=True):
        text = [f"<b>{op}</b> {shape}<br>node {node}{' (root)' if root else ''}, computation {c}, depth {d}"
                for op, shape, node, root, c, d in zip(part["opcode"], part["shape"], part["node"], part["root"],
                                                      part["computation"], part["depth"])]
        figure.add_trace(trace(x=part["x"], y=part["y"], mode="markers", name=str(opcode), text=text,
                               hovertemplate="%{text}<extra></extra>",
                               marker={"size": 12, "color": colours[str(opcode)],
                                       "line": {"width": np.where(part["root"], 3, 0.5), "color": "#333"}}))
    if graph.config_nodes is not None and len(graph.config_nodes):
        nodes = np.asarray(graph.config_nodes)
        figure.add_scatter(x=x[nodes], y=y[nodes], mode="markers", name="configurable", hoverinfo="skip",
                           marker={"symbol": "square-open", "size": 17, "color": "#333"})
    bands = layout.groupby("computation")["y"].max()
    for computation, top in bands.items():
        figure.add_annotation(x=-0.6, y=top, text=f"computation {computation}", showarrow=False, xanchor="right",
                              font={"size": 10, "color": "#666"})
    rows = int(round(float(-y.min()))) + 1 if len(y) else 1
    figure.update_layout(title=f"{graph.name}: {len(layout)} nodes, {len(graph.edges)} edges, {len(bands)} computations",
                         height=min(1600, max(320, 28 * rows + 120)), margin=_MARGIN, plot_bgcolor="white",
                         xaxis={"title": "depth (longest path from the operands)", "zeroline": False, "showgrid": False,
                                "range": [-3.5, float(x.max(initial=0)) + 0.6]},
                         yaxis={"visible": False}, legend={"title": {"text": "opcode"}})
    return figure
