"""Tunelab dashboard entry point: ``python -m streamlit run app/main.py`` (or ``tunelab serve``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.navigation import pages  # noqa: E402

st.set_page_config(page_title="Tunelab", page_icon=":material/tune:", layout="wide")
st.navigation(pages()).run()
