"""The dashboard's pages, in the order of the method: space → design → run → analyse → compare → export,
then the learned models (surrogates).

Adding a page is one line here plus a thin script in ``pages/``.
"""

from importlib.resources import files
from pathlib import Path

import streamlit as st

#: The page scripts: the ``pages`` package, in a checkout or wherever it was installed.
PAGES_DIR = Path(str(files("pages")))

#: (section, file in pages/, title, icon, url path)
PAGE_TABLE: list[tuple[str, str, str, str, str]] = [
    ("Set up", "studies.py", "Studies", ":material/folder_open:", "studies"),
    ("Set up", "space.py", "Space", ":material/grid_on:", "space"),
    ("Experiment", "design.py", "Design", ":material/scatter_plot:", "design"),
    ("Experiment", "run.py", "Run", ":material/play_circle:", "run"),
    ("Experiment", "analyze.py", "Analyze", ":material/analytics:", "analyze"),
    ("Results", "compare.py", "Compare", ":material/compare_arrows:", "compare"),
    ("Results", "export.py", "Export", ":material/download:", "export"),
    ("Models", "surrogates.py", "Surrogates", ":material/memory:", "surrogates"),
]


def page(file: str) -> st.Page:
    """The page of ``file`` (e.g. ``"space.py"``), as the navigation registers it (for ``st.page_link``)."""
    for i, (_, name, title, icon, slug) in enumerate(PAGE_TABLE):
        if name == file:
            return st.Page(PAGES_DIR / name, title=title, icon=icon, url_path=slug, default=(i == 0))
    raise KeyError(file)


def pages() -> dict[str, list[st.Page]]:
    sections: dict[str, list[st.Page]] = {}
    for section, file, *_ in PAGE_TABLE:
        if (PAGES_DIR / file).is_file():
            sections.setdefault(section, []).append(page(file))
    return sections
