"""The model-term builder shared by the Design and Analyze pages.

A table of checkboxes (one row per factor: linear, quadratic, cubic, inverse), a pick-list of
pairwise interactions, and the formula text box; editing either side updates the other.
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd
import streamlit as st

from engine.errors import UserError
from engine.model_terms import KINDS, TermChoice, default_choice, from_formula, to_formula
from engine.space import Space


def _table(space: Space, choice: TermChoice) -> pd.DataFrame:
    rows = []
    for f in space.factors:
        rows.append({"factor": f.name, **{kind: f.name in getattr(choice, kind) for kind in KINDS}})
    return pd.DataFrame(rows, columns=["factor", *KINDS])


def _pair_label(pair: tuple[str, str]) -> str:
    return f"{pair[0]}:{pair[1]}"


def term_builder(space: Space, key: str, initial: str | None = None, response: str | None = None) -> str:
    """Render the builder and return the current formula (``~ ...`` or ``response ~ ...``)."""
    state = f"{key}_choice"
    version = f"{key}_version"
    text_key = f"{key}_formula"
    if state not in st.session_state:
        choice = default_choice(space)
        if initial:
            try:
                choice = from_formula(initial, space)
            except (UserError, ValueError):
                pass
        st.session_state[state] = choice
        st.session_state[version] = 0
        st.session_state[text_key] = to_formula(choice, response)

    def from_text() -> None:
        try:
            st.session_state[state] = from_formula(st.session_state[text_key], space)
            st.session_state[version] += 1  # rebuild the checkboxes from the new choice
            st.session_state.pop(f"{key}_error", None)
        except (UserError, ValueError) as exc:
            st.session_state[f"{key}_error"] = str(exc)

    choice: TermChoice = st.session_state[state]
    numeric = {f.name for f in space.factors if f.numeric}
    edited = st.data_editor(
        _table(space, choice),
        hide_index=True,
        width="stretch",
        disabled=["factor"],
        key=f"{key}_table_{st.session_state[version]}",
        column_config={kind: st.column_config.CheckboxColumn(kind) for kind in KINDS},
    )
    all_pairs = [_pair_label(p) for p in combinations(space.names, 2)]
    picked = st.multiselect(
        "Pairwise interactions",
        all_pairs,
        default=[_pair_label(p) for p in choice.interactions if _pair_label(p) in all_pairs],
        key=f"{key}_pairs_{st.session_state[version]}",
    )
    updated = TermChoice(
        **{kind: [r["factor"] for r in edited.to_dict(orient="records") if r[kind] and (kind == "linear" or r["factor"] in numeric)]
           for kind in KINDS},
        interactions=[tuple(p.split(":")) for p in picked],
        extra=list(choice.extra),
    )
    if updated != choice:
        st.session_state[state] = updated
        st.session_state[text_key] = to_formula(updated, response)
    st.text_input("Formula", key=text_key, on_change=from_text,
                  help="R-style: `~ x1 + x3 + I(x8^2) + I(1/x) + x1:x3`. Edit it here or with the checkboxes.")
    if error := st.session_state.get(f"{key}_error"):
        st.error(error)
    ignored = [r["factor"] for r in edited.to_dict(orient="records")
               if r["factor"] not in numeric and any(r[k] for k in KINDS[1:])]
    if ignored:
        st.caption(f"Quadratic, cubic and inverse terms need numeric factors; ignored for {', '.join(ignored)}.")
    return st.session_state[text_key]
