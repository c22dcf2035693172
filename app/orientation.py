"""Where a newcomer starts: the method in six steps, each a link to its page, and where the guide is."""

from __future__ import annotations

import streamlit as st

from app.navigation import page

#: (page, what a person does there), in the order of the method (DLMT).
STEPS = [
    ("studies.py", "pick a demo study below, create one from a template, or import a measured table"),
    ("space.py", "the knobs (factors, their levels) and the constraints between them"),
    ("design.py", "which configurations to measure: screening, Latin hypercube or D-optimal for a model"),
    ("run.py", "measure them; every result is stored as it arrives"),
    ("analyze.py", "fit the model, read the ANOVA and the effect summary, decide which factors to fix; "
                   "then design the next step"),
    ("export.py", "the tuned configuration as a file for your build, and the report"),
]
#: The About box of the menu, and where to read on.
ABOUT = ("**Tunelab**: exploratory, budget-aware performance tuning by the transparent DoE method (DLMT). "
         "The full guide is the repository's README.md; the command line: `tunelab --help`.")


def start_here(expanded: bool) -> None:
    with st.expander("Start here: the method in six steps", expanded=expanded, icon=":material/school:"):
        for number, (file, what) in enumerate(STEPS, start=1):
            target = page(file)
            st.page_link(target, label=f"{number}. {target.title}: {what}", icon=target.icon)
        st.caption("Compare replays search strategies (random, greedy, GA, Bayesian optimisation, DLMT…) on a "
                   "measured table. The full guide: README.md in the repository; the CLI: `tunelab --help`.")
