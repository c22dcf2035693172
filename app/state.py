"""The dashboard's one store per process (Streamlit sessions share it; the store serialises access)."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from app.escape import escape_md
from storage import Store, StoreError


@st.cache_resource(show_spinner=False)
def _open(path: str) -> Store:
    fresh = not Path(path).exists()
    store = Store(path)
    if fresh and os.environ.get("TUNELAB_DEMO", "1") != "0":
        from workflows.demo import seed_demo_studies

        seed_demo_studies(store)
    return store


def db_path() -> str:
    return str(Path(os.environ.get("TUNELAB_DB", "tunelab.duckdb")).expanduser().resolve())


def get_store() -> Store:
    """The store, or a one-line error on the page (locked or unwritable file) and a stop."""
    try:
        return _open(db_path())
    except StoreError as exc:
        st.error(escape_md(exc))
        st.stop()
