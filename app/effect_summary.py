"""The Analyze page's effect summary (JMP): one row per term with its LogWorth bar, and the pruning
buttons — remove the chosen terms, remove the least significant one, undo — that edit the model
the page fits, through the term builder's state."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.term_builder import can_undo, replace_formula, undo_formula
from engine.analysis import LinearModel
from engine.analysis.display import format_p
from engine.analysis.effects import effect_summary, formula_without
from engine.space.factors import Space


def effect_summary_panel(model: LinearModel, anova_table: pd.DataFrame, space: Space, builder: str) -> None:
    """Draw the summary of ``model``; its buttons rewrite the formula of the term builder ``builder``."""
    table = effect_summary(model, anova_table)
    st.subheader("Effect summary")
    st.caption("LogWorth = −log10(p): 1.3 is p = 0.05, 2 is p = 0.01. Remove what does not matter, one term at "
               "a time; every change refits the model, and Undo brings the last one back.")
    shown = pd.DataFrame({"term": table["term"], "LogWorth": table["LogWorth"],
                          "p": [format_p(p) for p in table["Pr(>F)"]]})
    top = max(2.0, float(table["LogWorth"].max())) if len(table) else 2.0
    st.dataframe(shown, hide_index=True, width="stretch", key=f"{builder}_effects",
                 column_config={"LogWorth": st.column_config.ProgressColumn("LogWorth", min_value=0.0, max_value=top,
                                                                           format="%.2f")})
    terms = list(table["term"])
    pick = f"{builder}_prune_pick"
    picked = st.multiselect("Terms to remove", terms, key=pick)
    remove, weakest, undo = st.columns(3)
    remove.button("Remove", key=f"{builder}_remove", disabled=not picked, on_click=_prune,
                  args=(builder, space, formula_without(model, picked), pick))
    if terms:
        weakest.button(f"Remove {terms[-1]} (least significant)", key=f"{builder}_remove_weakest", on_click=_prune,
                       args=(builder, space, formula_without(model, terms[-1:]), pick))
    undo.button("Undo", key=f"{builder}_undo", disabled=not can_undo(builder), on_click=undo_formula,
                args=(builder, space))


def _prune(builder: str, space: Space, formula: str, pick: str) -> None:
    st.session_state[pick] = []  # the removed terms leave the pick-list's options
    replace_formula(builder, space, formula)
