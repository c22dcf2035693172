"""The model-term builder shared by the Design and Analyze pages.

A grid of checkboxes (one row per factor: linear, quadratic, cubic, inverse), a pick-list of
pairwise interactions, and the formula text box; editing either side updates the other.
"""

from __future__ import annotations

from itertools import combinations

import streamlit as st

from app.escape import code_md, escape_md
from engine.errors import UserError
from engine.model.choice import KINDS, TermChoice, default_choice, from_formula, to_formula
from engine.space.factors import Space


def _pair_label(pair: tuple[str, str]) -> str:
    return f"{pair[0]}:{pair[1]}"


def _pair(label: str) -> tuple[str, str]:
    """The factors of an ``a:b`` label (factor names are identifiers, so there is one colon)."""
    first, _, second = label.partition(":")
    return first, second


def term_builder(space: Space, key: str, initial: str | None = None, response: str | None = None) -> str:
    """Render the builder and return the current formula (``~ ...`` or ``response ~ ...``)."""
    state = f"{key}_choice"
    version = f"{key}_version"
    text_key = f"{key}_formula"
    if state not in st.session_state:
        start = default_choice(space)
        if initial:
            try:
                start = from_formula(initial, space)
            except (UserError, ValueError):
                pass
        st.session_state[state] = start
        st.session_state[version] = 0
    if text_key not in st.session_state:  # new, or dropped by Streamlit while the builder was hidden
        st.session_state[text_key] = to_formula(st.session_state[state], response)

    def from_text() -> None:
        try:
            st.session_state[state] = from_formula(st.session_state[text_key], space)
            st.session_state[version] += 1  # rebuild the checkboxes from the new choice
            st.session_state.pop(f"{key}_error", None)
        except (UserError, ValueError) as exc:
            st.session_state[f"{key}_error"] = str(exc)

    choice: TermChoice = st.session_state[state]
    numeric = {f.name for f in space.factors if f.numeric}
    ticked: dict[str, list[str]] = {kind: [] for kind in KINDS}
    header = st.columns([2, 1, 1, 1, 1])
    header[0].markdown("**factor**")
    for column, kind in zip(header[1:], KINDS):
        column.markdown(f"**{escape_md(kind)}**")
    for f in space.factors:
        row = st.columns([2, 1, 1, 1, 1])
        row[0].markdown(code_md(f.name))
        for column, kind in zip(row[1:], KINDS):
            allowed = kind == "linear" or f.name in numeric
            on = column.checkbox(
                f"{kind} {f.name}", value=allowed and f.name in getattr(choice, kind), disabled=not allowed,
                key=f"{key}_{kind}_{f.name}_{st.session_state[version]}", label_visibility="collapsed",
            )
            if on:
                ticked[kind].append(f.name)
    all_pairs = [_pair_label(p) for p in combinations(space.names, 2)]
    picked = st.multiselect(
        "Pairwise interactions",
        all_pairs,
        default=[_pair_label(p) for p in choice.interactions if _pair_label(p) in all_pairs],
        key=f"{key}_pairs_{st.session_state[version]}",
    )
    updated = TermChoice(
        **ticked,
        interactions=[_pair(p) for p in picked],
        extra=list(choice.extra),
    )
    if updated != choice:
        st.session_state[state] = updated
        st.session_state[text_key] = to_formula(updated, response)
    st.text_input("Formula", key=text_key, on_change=from_text,
                  help="R-style: `~ x1 + x3 + I(x8^2) + I(1/x) + x1:x3`. Edit it here or with the checkboxes.")
    if len(numeric) < len(space.factors):
        st.caption("Quadratic, cubic and inverse terms need numeric factors (categorical and boolean ones are linear only).")
    if error := st.session_state.get(f"{key}_error"):
        # said once, here; what follows keeps the last formula that parsed, as the checkboxes show it
        st.error(f"{escape_md(error)} — the model below stays the last valid one.")
        return to_formula(updated, response)
    formula: str = st.session_state[text_key]
    return formula


def _apply(key: str, space: Space, formula: str) -> None:
    st.session_state[f"{key}_formula"] = formula
    st.session_state[f"{key}_choice"] = from_formula(formula, space)
    st.session_state[f"{key}_version"] = st.session_state.get(f"{key}_version", 0) + 1
    st.session_state.pop(f"{key}_error", None)


def replace_formula(key: str, space: Space, formula: str) -> None:
    """Set the builder ``key`` to ``formula`` (a button's callback: before the widgets are drawn),
    remembering the formula it replaces for :func:`undo_formula`."""
    st.session_state.setdefault(f"{key}_history", []).append(st.session_state[f"{key}_formula"])
    _apply(key, space, formula)


def undo_formula(key: str, space: Space) -> None:
    """Back to the formula before the last :func:`replace_formula` (a button's callback)."""
    history = st.session_state.get(f"{key}_history") or []
    if history:
        _apply(key, space, history.pop())


def can_undo(key: str) -> bool:
    return bool(st.session_state.get(f"{key}_history"))
