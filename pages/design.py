"""Design: choose which configurations to measure next (screening, space-filling or D-optimal)."""

import streamlit as st

from app.components import continue_from_decisions, flash, guard, show_flash, study_candidates, study_picker
from app.escape import escape_md
from app.state import get_store
from app.term_builder import term_builder
from engine.analysis.study_data import restrict
from engine.design import (
    design_types,
    fractional_factorial,
    full_factorial,
    latin_hypercube,
    optimal_design,
    plackett_burman,
    random_design,
    suggest_size,
)
from engine.design.plots import scatter_matrix_data, scatter_matrix_figure
from engine.model.formula import model_matrix
from workflows import StudySession

CRITERIA_HELP = {
    "D": "det(M)^(1/k), M = Z'Z/n: the larger, the more precisely all coefficients are estimated together.",
    "A": "Average variance of the coefficient estimates: smaller is better.",
    "I": "Average prediction variance over the candidates: smaller is better.",
    "Ge": "G-efficiency, k / the worst prediction variance over the candidates: 1 is ideal.",
    "Dea": "exp(1 − 1/Ge): a lower bound on the D-efficiency.",
}
RULES = {"2k": "2 × coefficients (DLMT on the Laplacian)", "orio": "round(1.2 × terms) + 1 (automated DLMT)",
         "custom": "My own number"}

store = get_store()
st.title("Design")
st.caption("A design lists the configurations to measure next. Screening designs find the factors that matter; "
           "a D-optimal design spends each measurement where the model learns the most.")
show_flash()
study = study_picker(store)
if study is None:
    st.stop()
spec = study.spec


session = StudySession(store, study.name)
fixed, continued_formula, step = continue_from_decisions(session, key="design")
candidates = study_candidates(session, fixed)
st.caption(f"Candidates: {len(candidates):,} valid configurations"
           + (" (a uniform sample of a space too large to list)" if session.candidates_sampled(fixed) else
              " (every one)"))
types = {t.name: t for t in design_types()}
kind = st.selectbox("Design type", list(types), index=list(types).index("dopt"),
                    format_func=lambda name: types[name].label, key="design_kind")
st.caption(escape_md(types[kind].summary))

params: dict = {}
formula = None
force = False
measured = restrict(store.measurements(study.name), fixed)  # rows that still fit this step can be reused
if kind == "dopt":
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Model terms**")
        formula = term_builder(spec.space, key=f"design_terms_{study.id}_{step or 0}", initial=continued_formula)
    with right:
        k = None
        with guard():
            k = model_matrix(formula, candidates.head(2000)).k
        rule = st.radio("Size", list(RULES), format_func=RULES.get, key="design_rule")
        suggested = None
        if rule != "custom":
            with guard():
                suggested = suggest_size(formula, rule, data=candidates.head(2000))
        runs = st.number_input("Runs", min_value=1, max_value=100_000, value=int(suggested or max(2 * (k or 1), 2)),
                               key=f"design_runs_{rule}_{suggested}", disabled=rule != "custom")
        if k is not None:
            st.caption(f"{k:d} coefficients (intercept included).")
            if runs < k:
                st.warning(f"Runs = {runs:d} (above) is fewer than this model's {k:d} coefficients: a design that "
                           f"size cannot estimate it; ask for at least {k:d}.")
        repeats = st.number_input("Random starts", 1, 50, 5, key="design_repeats")
        criterion = st.radio("Criterion", ["D", "A", "I"], horizontal=True, key="design_criterion")
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="design_seed")
        force = st.checkbox(f"Keep the {measured['status'].eq('ok').sum() if len(measured) else 0} measured",
                            value=len(measured) > 0, key="design_force", disabled=measured.empty,
                            help="The configurations measured so far join the design as they are: not measured, "
                                 "nor charged, again.")
        params = {"runs": int(runs), "repeats": int(repeats), "criterion": criterion, "seed": int(seed)}
else:
    a, b = st.columns(2)
    if types[kind].needs_runs:
        params["runs"] = int(a.number_input("Runs", 1, 100_000, 2 * len(spec.space.factors), key="design_runs"))
    if kind == "fracfact":
        text = a.text_input("Generators (optional)", placeholder="x5 = x1*x2*x3, x6 = x2*x3*x4", key="design_generators")
        params["generators"] = [g.strip() for g in text.split(",") if g.strip()] or None
    params["seed"] = int(b.number_input("Seed", 0, 2**31 - 1, 0, key="design_seed"))


def build():
    if kind == "dopt":
        forced = measured.loc[measured["status"] == "ok", spec.space.names].drop_duplicates() if force else None
        return optimal_design(candidates, formula, params["runs"], repeats=params["repeats"], seed=params["seed"],
                              criterion=params["criterion"], forced=forced)
    if kind == "factorial":
        return full_factorial(candidates, seed=params["seed"])
    if kind == "random":
        return random_design(candidates, params["runs"], seed=params["seed"])
    if kind == "lhs":
        return latin_hypercube(spec.space, params["runs"], seed=params["seed"])
    if kind == "pb":
        return plackett_burman(spec.space, seed=params["seed"])
    return fractional_factorial(spec.space, generators=params.get("generators"), seed=params["seed"])


#: What the design shown below was built from: a design of other settings is not shown beside these widgets
#: (and their warnings), where it would read as theirs.
settings = (study.id, step, kind, formula, params, force)
if st.button("Build design", type="primary", key="design_build"):
    st.session_state.pop("design_result", None)  # a failed build leaves its error alone, not an earlier design
    with guard():
        with st.spinner("Building the design…"):
            st.session_state["design_result"] = (settings, build())

built_settings, result = st.session_state.get("design_result", (None, None))
if result is not None and built_settings[0] == study.id and built_settings != settings:
    st.info(f"The {result.runs:d}-run design built earlier used other settings, so it is not shown. Press "
            "**Build design** for a design of the settings above (or set them back to see it).")
elif result is not None and built_settings == settings:
    st.subheader(f"{escape_md(types[kind].label)}: {result.runs:d} runs ({result.seconds:.2f} s)")
    if result.criteria:
        cols = st.columns(len(result.criteria))
        for col, (name, value) in zip(cols, result.criteria.items()):
            col.metric(name, f"{value:.4g}", help=CRITERIA_HELP.get(name))
        for name in result.criteria:
            st.caption(f"**{escape_md(name)}** — {escape_md(CRITERIA_HELP.get(name, ''))}")
    facts = {k: v for k, v in result.info.items() if isinstance(v, (int, float, str)) and k != "candidate_source"}
    if facts:
        st.caption(escape_md(" · ".join(f"{k}: {v}" for k, v in facts.items())))
    forced = set(result.forced)
    flags = [r in forced for r in result.rows] if result.rows is not None else [False] * result.runs
    shown = result.design.assign(already_measured=flags)
    st.dataframe(shown, hide_index=True, width="stretch", key="design_table")
    varying = [n for n in spec.space.names if result.design[n].nunique() > 1][:6]
    if len(varying) >= 2:
        st.plotly_chart(scatter_matrix_figure(scatter_matrix_data(candidates, result.design, varying), varying),
                        width="stretch", key="design_plot")
    name = st.text_input("Design name", f"{types[kind].label} ({result.runs} runs)", key="design_name")
    if st.button("Save design into the study", type="primary", key="design_save"):
        with guard():
            design_id = store.save_design(study, result.design, name=name, kind=kind, formula=formula,
                                          params=params, criteria=result.criteria, forced=flags, step=step)
            pending = result.runs - sum(flags)
            st.session_state.pop("design_result", None)
            flash(f"Saved design {design_id:d}: {pending:d} configurations to measure (Run page).")
            st.rerun()

designs = store.designs(study.name)
if not designs.empty:
    st.subheader("Designs of this study")
    st.dataframe(designs[["id", "name", "kind", "formula", "rows", "pending", "created_at"]], hide_index=True,
                 width="stretch", key="design_list")
