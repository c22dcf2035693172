"""The Surrogates page's Cost model section (costmodel.md §7): cross-validate the tensor-program cost model (Kaufman
et al., MLSys 2021) beside its baselines, read a stored evaluation (baselines table and noise floor, predicted
against measured, one kernel's ranking, top-K curves, per-graph scores), look at a kernel's graph, and train the
GNN on a whole data set. Each action is one workflow call of :mod:`workflows.costmodel`, run in the script with its
progress shown, as ``tunelab costmodel`` runs it; the figures come from :mod:`engine.surrogates.costmodel.plots`.
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app.components import flash, guard, show_flash
from app.escape import code_md, escape_md
from engine.errors import UserError
from engine.surrogates.costmodel.evaluate import MODELS, noise_line
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.plots import (
    graph_picture,
    models_table,
    rank_data,
    rank_figure,
    scatter_data,
    scatter_figure,
    scores_table,
    topk_data,
    topk_figure,
    trained_table,
)
from storage import Store
from workflows.costmodel import DATA_SETS, evaluate, evaluation_results, load_graphs, stored_evaluations, train, trained_models

INTRO = ("A learned performance model for tensor programs (Kaufman et al., MLSys 2021): a graph neural network reads "
         "a kernel's HLO graph and its tile configuration and ranks the configurations (or predicts the runtime). "
         "Every model is cross-validated on the same folds, grouped by program, beside baselines it must beat: "
         "trees on graph features (gbdt), a trip-count heuristic, the compiler's default. τ is Kendall's rank "
         "correlation per kernel; the top-K slowdown is the best runtime among a model's K picks ÷ the best (1.0 = it "
         "found the optimum).")
DEFAULT_MODELS = ("gnn", "gbdt", "heuristic", "default")
JOINS = ("early", "late")
GNN_MISSING = ("The GNN needs torch and torch_geometric, which this environment lacks (`make run` and `make test` install them); "
               "the baselines run without them.")
PICK = "cm_pick"
FIGURES = {"τ (mean)": "%.3f", "τ sd over seeds": "%.3f", "MAPE": "%.2f", "median APE": "%.2f", "CPU s": "%.1f",
           **{f"top-{k} slowdown (median)": "%.3f" for k in (1, 5, 10)}}


def render(store: Store) -> None:
    show_flash()
    st.caption(INTRO)
    gnn = find_spec("torch") is not None and find_spec("torch_geometric") is not None
    if not gnn:
        st.info(GNN_MISSING)
    _evaluate_form(store, gnn)
    _evaluations(store)
    _training(store, gnn)


# -- evaluate -------------------------------------------------------------------------------------------------


def _evaluate_form(store: Store, gnn: bool) -> None:
    st.header("Evaluate")
    options = [m for m in MODELS if gnn or m != "gnn"]
    with st.form("cm_evaluate_form"):
        a, b = st.columns([2, 3])
        data = a.text_input("Data", "tpu-tiles", key="cm_ev_data",
                            help="A named data set or a folder of .npz graphs (one task). "
                                 + "; ".join(f"**{k}**: {v}" for k, v in DATA_SETS.items()))
        models = b.multiselect("Models", options, default=[m for m in DEFAULT_MODELS if m in options], key="cm_ev_models",
                               help="All are scored on the same folds. roofline serves the absolute task, heuristic "
                                    "and default the tile task.")
        c, d, e, f, g = st.columns(5)
        folds = c.number_input("Folds", 2, 1000, 5, key="cm_ev_folds", help="Program-grouped; capped at the programs.")
        seeds = d.text_input("Seeds", "0,1,2", key="cm_ev_seeds",
                             help="Comma-separated: each reshuffles the folds and reseeds the models.")
        epochs = e.number_input("GNN epochs", 1, 100_000, 30, key="cm_ev_epochs", disabled=not gnn,
                                help="Per fold and seed (the CLI's default is the model's 100). On the 15 real TPU "
                                     "kernels an epoch takes a few CPU seconds per fold.")
        hidden = f.number_input("GNN hidden", 1, 4096, 64, key="cm_ev_hidden", disabled=not gnn)
        join = g.selectbox("GNN join", JOINS, key="cm_ev_join", disabled=not gnn,
                           help="early: the configuration joins every node before message passing; late: the pooled "
                                "graph embedding.")
        name = st.text_input("Name", key="cm_ev_name", placeholder="default: DATA and the time")
        submitted = st.form_submit_button("Evaluate", type="primary")
    if not submitted:
        return
    status = st.status(f"Cross-validating {escape_md(', '.join(models) or 'no model')} on {escape_md(data.strip() or '?')}…",
                       expanded=True)
    with guard():
        params = {"gnn": {"epochs": int(epochs), "hidden": int(hidden), "join": join}} if "gnn" in models else {}
        done = evaluate(store, data.strip(), models, folds=int(folds), seeds=_seeds(seeds), params=params,
                        name=name.strip() or None, progress=lambda line: status.write(escape_md(line)))
        st.session_state[PICK] = done.id
        flash(f"Evaluation {done.id:d} stored: {len(done.result.table)} models on {escape_md(data.strip())} in "
              f"{done.seconds:.0f} s.")
        st.rerun()
    status.update(label="The evaluation stopped.", state="error")


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise UserError(f"seeds: comma-separated non-negative integers, got {text!r}")
    return seeds


# -- stored evaluations ---------------------------------------------------------------------------------------


def _evaluations(store: Store) -> None:
    st.header("Evaluations")
    stored = stored_evaluations(store)
    if stored.empty:
        st.info("No evaluation stored yet: run one above, or `tunelab costmodel evaluate --models gbdt,heuristic,default`.")
        return
    labels = {int(r.id): f"{r.id}: {r.name} ({r.task}; {', '.join(m['model'] for m in r.summary.get('models', []))})"
              for r in stored.itertuples()}
    if st.session_state.get(PICK) not in labels:
        st.session_state.pop(PICK, None)
    pick = st.selectbox("Stored evaluation", list(labels), format_func=lambda i: labels[i], key=PICK)
    if pick is None:
        return
    with guard():
        _evaluation(*evaluation_results(store, pick))


def _evaluation(row: dict[str, Any], predictions: pd.DataFrame) -> None:
    summary, key = row["summary"], row["id"]
    seeds = [int(s) for s in summary.get("seeds", [])] or sorted(predictions["seed"].unique().tolist())
    st.caption(escape_md(f"{row['data']}: {summary.get('graphs')} graphs of {summary.get('programs')} programs "
                         f"({row['task']} task), {summary.get('folds')} program-grouped folds × seeds "
                         f"{', '.join(map(str, seeds))}; fitted on {summary.get('cpu', 'an unknown CPU')}. Parameters: ")
               + (f"{code_md(json.dumps(summary['params']))}." if summary.get("params") else "the defaults."))
    for note in summary.get("notes") or []:
        st.info(escape_md(note))
    st.dataframe(models_table(summary), hide_index=True, width="stretch", key="cm_models",
                 column_config={column: st.column_config.NumberColumn(format=fmt) for column, fmt in FIGURES.items()})
    st.caption(escape_md(noise_line(summary.get("noise"))) + " CPU s: seconds fitting and predicting, over every seed "
               "and fold.")
    models = [m["model"] for m in summary.get("models", [])] or list(dict.fromkeys(predictions["model"]))
    a, b = st.columns(2)
    model = a.selectbox("Model", models, key=f"cm_model_{key}")
    seed = b.selectbox("Seed", seeds, key=f"cm_seed_{key}", help="Each seed is its own split into folds.")
    if model is None or seed is None:
        return
    noise = summary.get("noise")
    st.subheader("Predicted against measured")
    st.plotly_chart(scatter_figure(scatter_data(predictions, model, seed=seed), task=row["task"], noise=noise),
                    width="stretch", key="cm_scatter")
    st.subheader("One kernel's configurations in the order a model ranks them")
    graphs = _kernels(predictions)
    c, d = st.columns([2, 3])
    graph = c.selectbox("Kernel", list(graphs), format_func=lambda g: graphs[g], key=f"cm_rank_graph_{key}")
    overlaid = d.multiselect("Models", models, default=models, key=f"cm_rank_models_{key}")
    if graph is not None and overlaid:
        st.plotly_chart(rank_figure(rank_data(predictions, overlaid, graph, seed), noise=noise, title=graph),
                        width="stretch", key="cm_rank")
    st.subheader("Top-K slowdown")
    st.plotly_chart(topk_figure(topk_data(predictions, models=models), noise=noise), width="stretch", key="cm_topk")
    st.subheader("Per-graph scores")
    st.dataframe(scores_table(summary, seed), hide_index=True, width="stretch", key="cm_scores")
    with st.expander("Graph of a kernel"):
        _graph(row["data"], key)


def _kernels(predictions: pd.DataFrame) -> dict[str, str]:
    """Graph names → labels with their configuration counts, largest first."""
    counts = predictions.drop_duplicates(["graph", "config"]).groupby("graph").size().sort_values(ascending=False, kind="stable")
    return {str(g): f"{g} ({n} configurations)" for g, n in counts.items()}


@st.cache_resource(max_entries=4, ttl=600, show_spinner="Reading the graphs…")
def _graphs(data: str) -> list[TensorGraph]:
    return load_graphs(data)


def _graph(data: str, key: int) -> None:
    with guard():
        graphs = {g.name: g for g in _graphs(data)}
        name = st.selectbox("Kernel", list(graphs), key=f"cm_graph_{key}",
                            format_func=lambda n: f"{n} ({len(graphs[n].opcodes)} nodes)")
        if name is not None:
            st.plotly_chart(graph_picture(graphs[name]), width="stretch", key="cm_graph")


# -- training -------------------------------------------------------------------------------------------------


def _training(store: Store, gnn: bool) -> None:
    st.header("Trained models")
    st.caption("The GNN trained on every graph of a data set (10% of the programs held back to stop early when there "
               "are 30 or more) and kept beside the database, as `tunelab costmodel train` does.")
    listing = trained_models(store)
    if listing.empty:
        st.info("No cost model trained yet." + ("" if gnn else " " + GNN_MISSING))
    else:
        st.dataframe(trained_table(listing), hide_index=True, width="stretch", key="cm_trained",
                     column_config={"CPU min": st.column_config.NumberColumn(format="%.1f"),
                                    "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm")})
    if not gnn:
        return
    with st.form("cm_train_form"):
        a, b, c, d = st.columns([3, 3, 1, 1])
        data = a.text_input("Data", "tpu-tiles", key="cm_tr_data", help="tpu-tiles or a folder of .npz graphs")
        name = b.text_input("Name", key="cm_tr_name", placeholder="a folder name")
        epochs = c.number_input("Epochs", 1, 100_000, 30, key="cm_tr_epochs")
        hidden = d.number_input("Hidden", 1, 4096, 64, key="cm_tr_hidden")
        submitted = st.form_submit_button("Train", type="primary")
    if not submitted:
        return
    bar = st.progress(0.0, text="Reading the graphs…")
    with guard():
        done = train(store, data.strip(), name.strip(), params={"epochs": int(epochs), "hidden": int(hidden)},
                     on_epoch=lambda epoch, loss, metric: _epoch(bar, epoch, int(epochs), loss, metric))
        flash(f"Cost model '{escape_md(done.name)}' trained on {done.graphs:,} graphs in {done.seconds / 60:.1f} CPU "
              f"minutes; checkpoint in {escape_md(done.folder)}.{escape_md(''.join(' ' + note for note in done.notes))}")
        st.rerun()


def _epoch(bar: DeltaGenerator, epoch: int, epochs: int, loss: float, metric: float) -> None:
    validation = "" if metric != metric else f", validation {metric:.4f}"  # NaN: no validation programs
    bar.progress(min(1.0, epoch / epochs), text=f"epoch {epoch} of {epochs}: loss {loss:.4f}{validation}")
