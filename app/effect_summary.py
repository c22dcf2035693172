"""The Analyze page's effect summary (JMP): one row per term with its LogWorth bar, and the pruning
buttons — remove the chosen terms, remove the least significant one, undo — that edit the model
the page fits, through the term builder's state. Removing a term removes the terms that contain it
(engine.analysis.effects: the model stays hierarchical), and the panel says which before the click."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.escape import escape_md
from app.term_builder import can_undo, replace_formula, undo_formula
from engine.analysis import LinearModel
from engine.analysis.display import format_p
from engine.analysis.effects import containing_terms, effect_summary, formula_without, weakest_term
from engine.space.factors import Space


def effect_summary_panel(model: LinearModel, anova_table: pd.DataFrame, space: Space, builder: str) -> None:
    """Draw the summary of ``model``; its buttons rewrite the formula of the term builder ``builder``."""
    table = effect_summary(model, anova_table)
    st.subheader("Effect summary")
    st.caption("LogWorth = −log10(p): 1.3 is p = 0.05, 2 is p = 0.01. Remove what does not matter, one term at "
               "a time; every change refits the model, and Undo brings the last one back. ^: another term "
               "contains this one (x6 is in I(x6^2)); removing it removes those too, as JMP's stepwise does.")
    shown = pd.DataFrame({"term": table["term"], "LogWorth": table["LogWorth"],
                          "p": [format_p(p) for p in table["Pr(>F)"]], "^": table["^"]})
    top = max(2.0, float(table["LogWorth"].max())) if len(table) else 2.0
    st.dataframe(shown, hide_index=True, width="stretch", key=f"{builder}_effects",
                 column_config={"LogWorth": st.column_config.ProgressColumn("LogWorth", min_value=0.0, max_value=top,
                                                                           format="%.2f")})
    pick = f"{builder}_prune_pick"
    picked = st.multiselect("Terms to remove", list(table["term"]), key=pick)
    along = containing_terms(model, picked)
    if along:
        st.caption(escape_md(f"Removing {', '.join(picked)} also removes {', '.join(along)}: "
                             f"{'they contain' if len(along) > 1 else 'it contains'} what you picked."))
    remove, weakest, undo = st.columns(3)
    remove.button("Remove", key=f"{builder}_remove", disabled=not picked, on_click=_prune,
                  args=(builder, space, formula_without(model, picked), pick))
    least = weakest_term(model, table)
    if least is not None:
        weakest.button(f"Remove {least} (least significant)", key=f"{builder}_remove_weakest", on_click=_prune,
                       args=(builder, space, formula_without(model, [least]), pick),
                       help="The least significant term that no other term contains.")
    undo.button("Undo", key=f"{builder}_undo", disabled=not can_undo(builder), on_click=undo_formula,
                args=(builder, space))


def _prune(builder: str, space: Space, formula: str, pick: str) -> None:
    st.session_state[pick] = []  # the removed terms leave the pick-list's options
    replace_formula(builder, space, formula)
