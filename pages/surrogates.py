"""Surrogates: DiffTune's foundation, Tunelab's llvm-mca-like simulator (one block; accuracy against llvm-mca or this
CPU's measurements), DiffTune's learning of its parameter table (data sets, surrogates, experiments), and the learned
cost model of tensor programs (Kaufman et al.: the GNN beside its baselines, per kernel)."""

import streamlit as st

from app import costmodel_view
from app.difftune import learning, simulator
from app.state import get_store

SECTIONS = {"Simulator": simulator.render, "DiffTune learning": learning.render,
            "Cost model": costmodel_view.render}

store = get_store()
st.title("Surrogates")
st.caption("DiffTune learns a CPU simulator's parameters from measured basic-block throughputs. Its foundation: "
           "Tunelab's llvm-mca-like simulator with explicit parameter tables, and blocks measured on this CPU "
           "(`tunelab blocks measure`). Cycles are per 100 iterations of the block, BHive's unit. The cost model learns "
           "to rank the tile configurations of TPU kernels from their graphs (Kaufman et al.), beside its baselines.")
section = st.segmented_control("Section", list(SECTIONS), default="Simulator", required=True, key="sg_section",
                               label_visibility="collapsed", bind="query-params")
SECTIONS[section or "Simulator"](store)
