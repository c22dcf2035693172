"""Decision widgets shared by the Analyze page's own proposal and a paused tuning run's proposal."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from app.components import flash, guard
from app.escape import escape_md
from engine.analysis import Decision, LinearModel
from engine.analysis.display import readable_table
from engine.space.factors import Space
from workflows import StudySession

#: The choices of which factors a proposal fixes, as the Analyze page names them.
RULE_LABELS = {"factor": "factor test (all its terms)", "term": "any significant term (the paper's)"}
ADJUST_LABELS = {"holm": "Holm", "fdr": "FDR (Benjamini–Hochberg)", "none": "none"}


@st.cache_data(show_spinner="Searching the model's optimum…", max_entries=32)
def _cached_proposal(_session: StudySession, _model: LinearModel, fingerprint: str, fixed: str, threshold: float,
                     anova_type: int, rule: str, adjust: str) -> Decision:
    return _session.propose(_model, threshold, fixed=json.loads(fixed), anova_type=anova_type, rule=rule, adjust=adjust)


def proposal(session: StudySession, model: LinearModel, fixed: Mapping[str, Any], threshold: float, anova_type: int,
             rule: str, adjust: str) -> Decision:
    """The session's proposal for ``model``, cached per study, model, data and options: the optimum search takes
    a second on a large space, and every widget reruns the page."""
    data = pd.util.hash_pandas_object(model.data_.assign(_y=model.y_raw_), index=False).to_numpy()
    best = session.measured_best_or_none()
    fingerprint = json.dumps([session.store.path, session.study.id, model.formula, model.transform_.label,
                              hashlib.sha1(data.tobytes()).hexdigest(), best.config if best else None], default=str)
    return _cached_proposal(session, model, fingerprint, json.dumps(dict(fixed), sort_keys=True, default=str), threshold,
                            anova_type, rule, adjust)


def fix_editor(space: Space, names: Sequence[str], proposed: Mapping[str, Any], point: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A checkbox and a level per factor, pre-filled with the proposal; returns the chosen fix.
    ``key`` names the proposal, so a new proposal resets the widgets."""
    st.markdown("**Fix these factors** (pre-filled with the proposal; change anything before accepting):")
    chosen: dict[str, Any] = {}
    grid = st.columns(3)
    for i, name in enumerate(names):
        box = grid[i % 3]
        fixed = box.checkbox(f"fix {name}", value=name in proposed, key=f"fix_{name}_{key}")
        levels = list(space.factor(name).levels)
        value = proposed.get(name, point.get(name))
        level = box.selectbox(f"{name} level", levels, index=levels.index(value) if value in levels else 0,
                              key=f"level_{name}_{key}", disabled=not fixed)
        if fixed:
            chosen[name] = level
    return chosen


def next_model_input(decision: Decision, fix: Mapping[str, Any], key: str) -> str:
    """The next step's formula, pre-filled from the factors ``fix`` leaves free: changing the fix
    rebuilds it (the widget is keyed by the fix), while an edit of the text stands until then."""
    fix_key = abs(hash(tuple(sorted((str(k), str(v)) for k, v in fix.items()))))
    return st.text_input("Model for the next step", decision.next_formula(fix), key=f"next_formula_{key}_{fix_key}",
                         help="Rebuilt from the factors left free whenever the fix above changes.")


def tuning_review(session: StudySession, actor: str) -> None:
    """When a tuning run (``tunelab tune`` without ``--auto``) waits on this study, show its proposal
    with accept / edit / reject; the answer goes to the decisions log for the run to resume from."""
    waiting = session.pending_decision()
    if waiting is None:
        return
    decision, step = waiting["decision"], waiting["step"]
    run = json.loads(waiting["run"])
    with st.container(border=True):
        st.subheader(f"A {escape_md(run['strategy'])} tuning run waits for your decision (step {step:d})")
        st.caption(f"Seed {escape_md(run['seed'])}, budget {escape_md(run['budget'])}. Answer here, then run the same `tunelab tune` "
                   "command again: it resumes from this decision without measuring anything twice.")
        for line in decision.explanation:
            st.markdown(f"- {escape_md(line)}")
        anova = decision.evidence.get("anova")
        if anova:
            st.dataframe(readable_table(pd.DataFrame(anova)), hide_index=True, width="stretch", key=f"tune_anova_{waiting['id']}")
        found = decision.evidence.get("predicted_best") or {}
        point = found.get("point", found)  # the fast path's evidence holds the point itself
        if point:
            st.caption("Predicted best: " + escape_md(", ".join(f"{k} = {v}" for k, v in point.items())))
        key = f"tune_{waiting['id']}"
        space = session.spec.space
        chosen_fix = fix_editor(space, space.names, decision.proposed["fix"], point, key)
        formula = next_model_input(decision, chosen_fix, key)
        note = st.text_input("Note (optional)", key=f"note_{key}")
        accept, reject = st.columns(2)
        action = ("accept" if accept.button("Accept", type="primary", key=f"accept_{key}")
                  else "reject" if reject.button("Reject", key=f"reject_{key}") else None)
        if action is None:
            return
        with guard():
            _, final = session.answer(action, actor, fix=chosen_fix, formula=formula, note=note or None)
            flash(f"Step {step:d} {escape_md(final.status)}; run `tunelab tune` again to go on.")
            st.rerun()
