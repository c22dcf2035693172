"""Tunelab dashboard entry point: ``python -m streamlit run app/main.py`` (or ``tunelab serve``).

Loopback only unless asked. Streamlit reads ``app/.streamlit/config.toml`` (next to this script)
wherever it is started from, and that file binds 127.0.0.1. Should the server still be bound to
anything but a loopback address (``--server.address``, ``STREAMLIT_SERVER_ADDRESS``), the dashboard
shows one error and nothing else unless ``TUNELAB_ALLOW_REMOTE=1`` says that was meant
(``tunelab serve --host ADDRESS`` sets it: naming the address is asking).
"""

import os

import streamlit as st

from app.cli.serve import ALLOW_REMOTE, is_loopback
from app.escape import escape_md
from app.navigation import pages
from app.orientation import ABOUT

st.set_page_config(page_title="Tunelab", page_icon=":material/tune:", layout="wide", menu_items={"About": ABOUT})
address = st.get_option("server.address")
if not is_loopback(address) and os.environ.get(ALLOW_REMOTE) != "1":
    st.error(f"server.address {escape_md(address or '(unset: every interface)')}: this dashboard serves its database to "
             f"whoever can reach it. Start it with `tunelab serve` (127.0.0.1), pass `--server.address 127.0.0.1`, "
             f"or set {ALLOW_REMOTE}=1 if exposing it is intended.")
    st.stop()
st.navigation(pages()).run()
