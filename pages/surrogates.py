"""Surrogates: the llvm-mca-like simulator (DiffTune's foundation): one block's disassembly, predictions and
timeline, and how close the simulator and llvm-mca-19 come to llvm-mca or to blocks measured on this CPU."""

import pandas as pd
import streamlit as st

from app.components import guard
from app.state import get_store
from engine.surrogates.difftune.metrics import accuracy_table
from engine.surrogates.difftune.plots import error_histogram, scatter_figure, timeline_figure
from storage.difftune import cpus, evaluations
from workflows.difftune import block_view, evaluate, find_blocks, stored_evaluation, this_cpu

ARCHS = ["haswell", "skylake", "ivybridge", "znver3", "znver4", "znver5", "sapphirerapids", "icelake-server"]

store = get_store()
st.title("Surrogates")
st.caption("DiffTune learns a CPU simulator's parameters from measured basic-block throughputs. Its foundation: "
           "Tunelab's llvm-mca-like simulator with explicit parameter tables, and blocks measured on this CPU "
           "(`tunelab blocks measure`). Cycles are per 100 iterations of the block, BHive's unit.")

cpu_id, host = this_cpu(store)
known = cpus(store).set_index("cpu_id")
st.caption(f"This CPU: **{cpu_id}** ({known.loc[cpu_id, 'model_name']}), nearest llvm-mca model `-mcpu={host}`.")

st.header("Simulator: one block")
left, right = st.columns([3, 1])
text = left.text_input("Find a block", placeholder="hex, an opcode (ADD64rm) or assembly (vfmadd)", key="dt_search",
                       help="Searches the anchor sample and this CPU's measured blocks.")
arch = right.selectbox("Model (-mcpu)", ARCHS, index=ARCHS.index(host) if host in ARCHS else 0, key="dt_arch")
found: list[str] = []
with guard():
    with st.spinner("Decoding the blocks (once)…"):
        found = find_blocks(store, text)
if not found:
    st.info("No block matches." if text else "No blocks yet: the data folder's anchor sample is absent, "
            "and nothing is measured (tunelab blocks measure).")
else:
    chosen = st.selectbox(f"Block ({len(found)} shown{', the first 200' if len(found) == 200 else ''})", found,
                          key="dt_block")
    view = None
    with guard():
        with st.spinner("Simulating…"):
            view = block_view(store, chosen, arch)
    if view is not None:
        cols = st.columns(len(view.predictions))
        for col, (name, cycles) in zip(cols, view.predictions.items()):
            col.metric(name, f"{cycles:,.1f}", help="cycles per 100 iterations")
        st.caption(f"{len(view.instructions)} instructions; {view.category}.")
        st.dataframe(view.instructions, hide_index=True, width="stretch", key="dt_instructions")
        if view.timeline.empty:
            st.warning(f"The {arch} table has no row for some opcode of this block: no timeline.")
        else:
            st.subheader("Timeline (first 3 iterations)")
            st.plotly_chart(timeline_figure(view.timeline), width="stretch", key="dt_timeline")

st.header("Simulator: evaluation")
with st.form("dt_evaluate"):
    a, b, c = st.columns(3)
    truth = a.radio("Truth", ["mca", "measured"], horizontal=True, key="dt_truth",
                    format_func={"mca": "llvm-mca-19 (anchor blocks)", "measured": f"measured on {cpu_id}"}.get)
    eval_arch = b.selectbox("Model (-mcpu)", ARCHS, index=ARCHS.index(host) if host in ARCHS else 0, key="dt_eval_arch")
    limit = c.number_input("Blocks (0: all)", 0, 1_000_000, 0, step=500, key="dt_limit")
    run = st.form_submit_button("Evaluate", type="primary")
if run:
    with guard():
        with st.spinner("Evaluating (about a minute for 25,000 blocks)…"):
            done = evaluate(store, truth=truth, arch=eval_arch, limit=int(limit) or None)
        st.session_state["dt_evaluation"] = done.id

stored = evaluations(store)
if stored.empty:
    st.info("No evaluation stored yet: press **Evaluate**, or run `tunelab difftune evaluate`.")
    st.stop()
labels = {int(r.id): f"{r.id}: {r.arch}, truth {r.truth}{'' if pd.isna(r.cpu_id) else f' ({r.cpu_id})'}, "
                     f"{r.summary.get('blocks', '?')} blocks" for r in stored.itertuples()}
ids = list(labels)
pick = st.selectbox("Evaluation", ids, format_func=labels.get, key="dt_pick",
                    index=ids.index(st.session_state["dt_evaluation"]) if st.session_state.get("dt_evaluation") in ids else 0)
with guard():
    _, predictions = stored_evaluation(store, pick)
    table = accuracy_table(predictions, "predictor")
    st.dataframe(table.style.format({"mape": "{:.2%}", "median_ape": "{:.2%}", "within_5pct": "{:.1%}",
                                     "kendall_tau": "{:.3f}"}), hide_index=True, width="stretch", key="dt_accuracy")
    a, b = st.columns(2)
    a.plotly_chart(scatter_figure(predictions), width="stretch", key="dt_scatter")
    b.plotly_chart(error_histogram(predictions), width="stretch", key="dt_errors")
