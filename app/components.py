"""Shared widgets: error guard, study picker, one-shot flash messages."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import streamlit as st

from app.escape import code_md, escape_md
from engine.errors import UserError
from storage import Store, StoredStudy
from workflows import StudySession

if TYPE_CHECKING:
    import pandas as pd

    from engine.compare.run import Comparison

STUDY_KEY = "study"

@contextmanager
def guard() -> Iterator[None]:
    """Show bad input as one ``st.error`` line instead of a traceback, escaped: the message echoes the input."""
    try:
        yield
    except UserError as exc:
        st.error(escape_md(exc))
    except (ValueError, OSError) as exc:
        st.error(escape_md(str(exc).splitlines()[0] if str(exc) else type(exc).__name__))


def flash(message: str) -> None:
    """Show ``message`` (Markdown, the user's parts escaped) once after the next rerun (survives ``st.rerun``)."""
    st.session_state["_flash"] = message


def show_flash() -> None:
    message = st.session_state.pop("_flash", None)
    if message:
        st.success(message)  # markdown: made by flash(), whose callers escape what they did not write


def remembered(names: Sequence[str], param: str, *fallbacks: Any) -> int:
    """Where a picker starts: the URL's ``?param=`` (a link or a reload), else the first of
    ``fallbacks`` that is one of ``names`` (what this session chose last), else the first name."""
    for candidate in (st.query_params.get(param), *fallbacks):
        if candidate in names:
            return names.index(candidate)
    return 0


def study_picker(store: Store, label: str = "Study", key: str = STUDY_KEY) -> StoredStudy | None:
    """Choose a study. The choice is in the URL (``?study=``, so a reload or a shared link keeps it)
    and is shared by the pages of the session that work on one study."""
    names = store.study_names()
    if not names:
        st.info("No studies yet. Create or import one on the **Studies** page.")
        return None
    index = remembered(names, STUDY_KEY, st.session_state.get(STUDY_KEY))
    name = st.selectbox(label, names, index=index, key=f"_picker_{key}")
    st.session_state[STUDY_KEY] = name
    st.query_params[STUDY_KEY] = name
    return store.get_study(name)


def design_picker(label: str, options: Mapping[str, int | None], key: str) -> int | None:
    """Choose among ``options`` (label -> design id, None for "all"); the choice is in the URL as
    ``?design=`` beside the study."""
    labels = list(options)
    by_id = {str(design): label for label, design in options.items() if design is not None}
    label = st.selectbox(label, labels, index=remembered(labels, "design", by_id.get(st.query_params.get("design", ""))),
                         key=key)
    design = options[label]
    if design is None:
        st.query_params.pop("design", None)
    else:
        st.query_params["design"] = str(design)
    return design


def continue_from_decisions(session: StudySession, key: str) -> tuple[dict[str, Any], str | None, int | None]:
    """Offer to continue from the decisions log: hold the factors fixed so far and start from the
    model the last decision handed on. Returns (fixed, formula, step); ({}, None, None) if declined."""
    state = session.next_step()
    if not state.fixed and state.formula is None:
        return {}, None, state.step
    fixes = ", ".join(f"{k} = {v}" for k, v in state.fixed.items()) or "nothing"
    use = st.checkbox(f"Step {state.step}: continue from the decisions log (fixed: {escape_md(fixes)}; model: "
                      f"{code_md(state.formula)})", value=True, key=f"{key}_continue")
    return (state.fixed, state.formula, state.step) if use else ({}, None, None)


@st.cache_data(show_spinner="Preparing the candidate set…", max_entries=16)
def _cached_candidates(_session: StudySession, db: str, study_id: int, fixed: str) -> pd.DataFrame:
    return _session.candidates(json.loads(fixed))


def study_candidates(session: StudySession, fixed: Mapping[str, Any]) -> pd.DataFrame:
    """The study's candidate configurations with ``fixed`` factors held (cached per database and study)."""
    return _cached_candidates(session, session.store.path, session.study.id,
                              json.dumps(fixed, sort_keys=True, default=str))


@st.cache_data(show_spinner=False, max_entries=16)
def comparison_summary(_comparison: Comparison, db: str, comparison_id: int) -> pd.DataFrame:
    """A stored comparison's summary table, computed once per database and comparison id, the cache's key (a stored
    comparison never changes; its bootstrap intervals took 0.6 s for 7 strategies × 1,000 runs on every rerun)."""
    from engine.compare.summary import summary_table

    return summary_table(_comparison)


def study_notes_editor(session: StudySession, key: str) -> None:
    """The study's notes (Markdown) with a preview; saved into the store and shown in the report."""
    with st.expander("Study notes (Markdown; in the report)", expanded=bool(session.notes())):
        text = st.text_area("Notes", session.notes(), key=f"{key}_notes_{session.study.id}", height=120,
                            placeholder="What you tried, what you suspect, what to measure next…")
        if st.button("Save notes", key=f"{key}_save_notes_{session.study.id}"):
            with guard():
                session.save_notes(text)
                st.success("Notes saved.")
        if text.strip():
            st.markdown(text)  # markdown: the user's own notes, previewed as the Markdown they are
