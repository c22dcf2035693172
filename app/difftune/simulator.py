"""The Surrogates page's Simulator section (DiffTune's foundation): one block's disassembly, predictions and
timeline, and how close the simulator and llvm-mca-19 come to llvm-mca or to blocks measured on this CPU."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import guard
from app.escape import code_md, escape_md
from engine.surrogates.difftune.metrics import accuracy_table
from engine.surrogates.difftune.plots import error_histogram, scatter_figure, timeline_figure
from storage import Store
from storage.difftune import cpus, evaluations
from workflows.difftune import block_view, blocks_decoded, evaluate, find_blocks, stored_evaluation, this_cpu
from workflows.difftune.views import MODEL_ARCHS

#: How an accuracy table (one row per predictor) reads on screen, in both sections.
ACCURACY_FORMAT = {"mape": "{:.2%}", "median_ape": "{:.2%}", "within_5pct": "{:.1%}", "kendall_tau": "{:.3f}"}


def render(store: Store) -> None:
    cpu_id, host = this_cpu(store)
    known = cpus(store).set_index("cpu_id")
    st.caption(f"This CPU: **{escape_md(cpu_id)}** ({escape_md(known.loc[cpu_id, 'model_name'])}), nearest llvm-mca "
               f"model {code_md(f'-mcpu={host}')}.")
    _one_block(store, host)
    _evaluation(store, cpu_id, host)


def _arch_index(host: str) -> int:
    return MODEL_ARCHS.index(host) if host in MODEL_ARCHS else 0


def _one_block(store: Store, host: str) -> None:
    st.header("Simulator: one block")
    left, right = st.columns([3, 1])
    text = left.text_input("Find a block", placeholder="hex, an opcode (ADD64rm) or assembly (vfmadd)", key="dt_search",
                           help="Searches the anchor sample and this CPU's measured blocks.")
    arch = right.selectbox("Model (-mcpu)", MODEL_ARCHS, index=_arch_index(host), key="dt_arch")
    found: list[str] = []
    if not (text or blocks_decoded(store) or st.session_state.get("dt_decode")):
        # Nothing is computed until asked (issue 31: the page's first open decoded and simulated for 49 s).
        st.button("Decode the blocks to browse them", key="dt_decode",
                  help="The anchor sample and this CPU's measured blocks, decoded once and kept in the database.")
        return
    with guard():
        with st.spinner("Decoding the blocks (once)…"):
            found = find_blocks(store, text)
    if not found:
        st.info("No block matches." if text else "No blocks yet: the data folder's anchor sample is absent, "
                "and nothing is measured (tunelab blocks measure).")
        return
    chosen = st.selectbox(f"Block ({len(found)} shown{', the first 200' if len(found) == 200 else ''})", found,
                          key="dt_block", index=None, placeholder="Pick a block: its predictions and timeline follow")
    if chosen is None:
        return
    view = None
    with guard():
        with st.spinner("Simulating…"):
            view = block_view(store, chosen, arch)
    if view is None:
        return
    cols = st.columns(len(view.predictions))
    for col, (name, cycles) in zip(cols, view.predictions.items()):
        col.metric(name, f"{cycles:,.1f}", help="cycles per 100 iterations")
    st.caption(f"{len(view.instructions)} instructions; {escape_md(view.category)}.")
    st.dataframe(view.instructions, hide_index=True, width="stretch", key="dt_instructions")
    if view.timeline.empty:
        st.warning(f"The {escape_md(arch)} table has no row for some opcode of this block: no timeline.")
    else:
        st.subheader("Timeline (first 3 iterations)")
        st.plotly_chart(timeline_figure(view.timeline), width="stretch", key="dt_timeline")


def _evaluation(store: Store, cpu_id: str, host: str) -> None:
    st.header("Simulator: evaluation")
    with st.form("dt_evaluate"):
        a, b, c = st.columns(3)
        truth = a.radio("Truth", ["mca", "measured"], horizontal=True, key="dt_truth",
                        format_func={"mca": "llvm-mca-19 (anchor blocks)", "measured": f"measured on {cpu_id}"}.get)
        eval_arch = b.selectbox("Model (-mcpu)", MODEL_ARCHS, index=_arch_index(host), key="dt_eval_arch")
        limit = c.number_input("Blocks (0: all)", 0, 1_000_000, 0, step=500, key="dt_limit")
        held_out = st.checkbox("Held-out blocks only (the fifth no learning run trains on)", key="dt_held_out")
        run = st.form_submit_button("Evaluate", type="primary")
    if run:
        with guard():
            with st.spinner("Evaluating (about a minute for 25,000 blocks)…"):
                done = evaluate(store, truth=truth, arch=eval_arch, limit=int(limit) or None, held_out=held_out)
            st.session_state["dt_pick"] = done.id  # shown, whatever was picked before

    stored = evaluations(store)
    if stored.empty:
        st.info("No evaluation stored yet: press **Evaluate**, or run `tunelab difftune evaluate`.")
        return
    labels = {int(r.id): f"{r.id}: {r.arch}, truth {r.truth}{'' if pd.isna(r.cpu_id) else f' ({r.cpu_id})'}, "
                         f"{r.summary.get('blocks', '?')} {'held-out ' if r.summary.get('held_out') else ''}blocks"
              for r in stored.itertuples()}
    ids = list(labels)
    pick = st.selectbox("Evaluation", ids, format_func=lambda i: labels[i], key="dt_pick")
    if pick is None:
        return
    with guard():
        _, predictions = stored_evaluation(store, pick)
        table = accuracy_table(predictions, "predictor")
        st.dataframe(table.style.format(ACCURACY_FORMAT), hide_index=True, width="stretch", key="dt_accuracy")
        a, b = st.columns(2)
        a.plotly_chart(scatter_figure(predictions), width="stretch", key="dt_scatter")
        b.plotly_chart(error_histogram(predictions), width="stretch", key="dt_errors")
