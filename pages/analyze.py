"""Analyze: fit a model on measurements, read the ANOVA, and decide which factors to fix."""

import pandas as pd
import streamlit as st

from app.components import (
    continue_from_decisions,
    design_picker,
    flash,
    guard,
    show_flash,
    study_notes_editor,
    study_picker,
)
from app.decision_widgets import (
    ADJUST_LABELS,
    RULE_LABELS,
    fix_editor,
    next_model_input,
    proposal,
    tuning_review,
)
from app.effect_summary import effect_summary_panel
from app.escape import escape_md
from app.model_cache import cached_analysis, diagnostic_figures, effect_figures, interaction_figure
from app.model_views import explore_panel, profiler_panel
from app.state import get_store
from app.term_builder import term_builder
from engine.analysis import coefficient_table
from engine.analysis.display import predicted_best_caption, readable_table
from engine.analysis.effects import strongest_pair
from engine.analysis.options import ADJUSTMENTS, FACTOR_RULES, TRANSFORMS, default_transform, nonpositive_warning
from engine.analysis.study_data import initial_formula, restrict
from engine.io.report_html import progress_data
from workflows import StudySession
from workflows.session import decision_fix_text

VIEWS = ["Diagnostics", "Effects", "Profiler", "Explore"]
store = get_store()
st.title("Analyze")
st.caption("Fit a linear model, read which terms matter (ANOVA), and decide which factors to fix and where. "
           "Every decision is recorded with the table it was based on.")
show_flash()
study = study_picker(store)
if study is None:
    st.stop()
spec = study.spec

with st.sidebar:
    actor = st.text_input("Your name (for the decisions log)", value=st.session_state.get("actor", "analyst"),
                          key="actor_input")
    st.session_state["actor"] = actor.strip() or "analyst"

session = StudySession(store, study.name)
tuning_review(session, st.session_state["actor"])

designs = store.designs(study.name)
sources = {"All measurements": None} | {
    f"Design {d.id}: {d.name} ({d.kind}, {d.rows} rows)": int(d.id) for d in designs.itertuples()}
design_id = design_picker("Measurements", sources, key=f"analyze_source_{study.id}")
data = session.analysis_data(design_id)


fixed, continued_formula, step = continue_from_decisions(session, key="analyze")
data = restrict(data, fixed)  # with factors fixed, only the measurements that agree with them fit this step


def decisions_log() -> None:
    st.subheader("Decisions log")
    log = session.decisions_log()
    if log.empty:
        st.write("No decisions recorded yet.")
    else:
        st.dataframe(log, hide_index=True, width="stretch", key="decisions_log",
                     column_config={"reasons": st.column_config.TextColumn(width="large"),
                                    "note": st.column_config.TextColumn(width="medium")})
        if st.button("Withdraw last decision", key="withdraw_decision",
                     help="It stays in the log, marked withdrawn; the study goes back to the step before it."):
            with guard():
                flash(f"Decision {session.withdraw_last_decision():d} withdrawn.")
                st.rerun()


STEP_HINT = ("Build this step's design on the **Design** page and measure it on **Run**, or untick 'continue' "
             "to analyse everything.")
if len(data) < 2:
    if fixed:
        st.info(f"Step {step:d}: {len(data)} measurement(s) agree with the fixed factors. {STEP_HINT}")
    else:
        st.info(f"{len(data)} successful measurement(s) here: measure a design first (Design → Run), "
                "or pick other measurements.")
    decisions_log()
    st.stop()
designed_for = [f for f in designs["formula"] if isinstance(f, str) and f]  # the models designs were built for
initial = (designs.set_index("id").loc[design_id, "formula"] if design_id is not None
           else continued_formula or (designed_for[-1] if designed_for else None))
initial = (f"{spec.objective} ~ {initial.split('~', 1)[-1].strip()}" if isinstance(initial, str) and initial
           else initial_formula(spec, data))

left, right = st.columns([3, 2])
with left:
    st.subheader("Model terms")
    builder = f"analyze_terms_{study.id}_{design_id}_{step or 0}"
    formula = term_builder(spec.space, key=builder, initial=initial, response=spec.objective)
with right:
    st.subheader("Options")
    transform = st.selectbox("Transform of the response", list(TRANSFORMS), key=f"analyze_transform_{study.id}",
                             index=TRANSFORMS.index(default_transform(data[spec.objective])),
                             help="boxcox: λ from car's powerTransform; boxcox-round: car's rounded λ; "
                                  "auto: Box-Cox only when the ncv test's p < 0.05.")
    anova_type = st.radio("ANOVA type", [1, 2, 3], horizontal=True, key="analyze_anova_type",
                          help="I: sequential, as R's summary(aov) — what the DLMT paper uses. II/III: car::Anova.")
    threshold = st.select_slider("Significance threshold", [0.001, 0.01, 0.05, 0.1], value=0.05,
                                 key="analyze_threshold")
    rule = st.radio("Fix a factor on", FACTOR_RULES, format_func=lambda name: RULE_LABELS[name], horizontal=True,
                    key="analyze_rule", help="Factor test: the partial F of all the factor's terms together, its p "
                    "adjusted across the factors. Any term: every factor of a term with p below the threshold.")
    adjust = st.selectbox("Multiple testing across factors", ADJUSTMENTS, format_func=lambda name: ADJUST_LABELS[name],
                          key="analyze_adjust", disabled=rule == "term",
                          help="Holm bounds the chance of fixing any inert factor; FDR (JMP's FDR LogWorth) the "
                               "share of inert factors among those fixed.")

result = None
with guard():
    result, model_key = cached_analysis(data, formula, transform, anova_type)
if result is None:
    if fixed:
        st.info(f"Step {step:d}: {len(data)} measurement(s) agree with the fixed factors. {STEP_HINT}")
    decisions_log()
    st.stop()

summary = result.summary
cols = st.columns(5)
cols[0].metric("Measurements", summary.n)
cols[1].metric("R²", f"{summary.r_squared:.3f}")
cols[2].metric("Adjusted R²", f"{summary.adj_r_squared:.3f}")
cols[3].metric("Residual df", summary.df_residual)
cols[4].metric("Transform", result.model.transform_.short_label, help=f"Response transform: {summary.transform}")
for line in summary.warnings:
    st.warning(escape_md(line), icon=":material/warning:")


def _colour(p: float) -> str:
    if pd.isna(p):
        return ""
    if p < 0.001:
        return "background-color: #b7e4c7"
    if p < 0.01:
        return "background-color: #d8f3dc"
    if p < 0.05:
        return "background-color: #eef9f0"
    if p < 0.1:
        return "background-color: #fff3bf"
    return ""


anova_table = result.anova
effect_summary_panel(result.model, anova_table, spec.space, builder)

st.subheader(f"ANOVA (Type {escape_md('I' * anova_type)})")
st.caption("Each row tests one term. Small p (green, with stars) means the term explains the response beyond "
           "noise; `***` p < 0.001, `**` < 0.01, `*` < 0.05, `.` < 0.1.")
colours = [_colour(p) for p in anova_table["Pr(>F)"]]
st.dataframe(readable_table(anova_table).style.apply(lambda _: colours, subset=["Pr(>F)"]), hide_index=True,
             width="stretch", key="anova_table")
with st.expander("Coefficients and tests"):
    st.dataframe(readable_table(coefficient_table(result.model)), hide_index=True, width="stretch")
    st.write(f"ncvTest (constant variance): χ² = {result.ncv_untransformed.statistic:.4g}, "
             f"p = {result.ncv_untransformed.p:.4g} — p < 0.05 suggests transforming the response.")
    if result.power:
        p = result.power
        st.write(f"Box-Cox λ = {p.lambda_:.4g} (SE {p.se:.3g}); car's rounded λ = {p.lambda_rounded:g}.")
    st.write(f"AIC {summary.aic:.5g}, BIC {summary.bic:.5g}, σ = {summary.sigma:.4g}.")

decision = None
with guard():  # the proposal's point is the model's optimum: the profiler opens there, the caption quotes it
    decision = proposal(session, result.model, fixed, threshold, anova_type, rule, adjust or "holm")
best = decision.evidence["predicted_best"] if decision is not None else None
strongest = strongest_pair(result.model, anova_table)
# One view at a time: tabs would draw every figure on each rerun, and a prune reruns the page.
view = st.radio("View", VIEWS, index=VIEWS.index("Effects"), horizontal=True, key="analyze_view",
                label_visibility="collapsed")
if view == "Diagnostics":
    residuals, qq, leverage, cooks = diagnostic_figures(result, model_key)
    a, b = st.columns(2)
    a.plotly_chart(residuals, width="stretch")
    b.plotly_chart(qq, width="stretch")
    a.plotly_chart(leverage, width="stretch")
    b.plotly_chart(cooks, width="stretch")
elif view == "Effects":
    a, b = st.columns(2)
    effects, screening = effect_figures(result, model_key)
    a.plotly_chart(effects, width="stretch")
    b.plotly_chart(screening, width="stretch")
    varying = [v for v in result.model.variables_ if data[v].nunique() > 1]
    if len(varying) >= 2 and strongest:
        pair = st.multiselect("Interaction plot of", varying, max_selections=2, key=f"ia_pair_{'_'.join(strongest)}",
                              default=[v for v in strongest if v in varying] or varying[:2],
                              help="Starts from the most significant two-factor term (else the two strongest factors).")
        if len(pair) == 2:
            st.plotly_chart(interaction_figure(result, model_key, *pair), width="stretch")
elif view == "Profiler":
    if result.model.variables_ and best is not None:
        profiler_panel(result.model, best["point"], spec.objective, key=f"profiler_{builder}",
                       levels_of={f.name: f.levels for f in spec.space.factors})
elif best is not None:
    explore_panel(result.model, anova_table, progress_data(spec, session.results()), data,
                  best["point"], strongest, spec.objective, key=f"explore_{builder}")

st.subheader("Decision")
if decision is not None and best is not None:
    for line in decision.explanation:
        st.markdown(f"- {escape_md(line)}")
    st.caption(escape_md(predicted_best_caption(best, spec.objective)))
    warning = nonpositive_warning(best["predicted"], data[spec.objective], spec.objective)
    if warning:
        st.warning(escape_md(warning))
    proposed_fix = decision.proposed["fix"]
    # widgets are keyed by the proposal, so a new proposal (after a model change) resets them
    version = abs(hash((result.model.formula, tuple(sorted(map(str, proposed_fix.items()))))))
    chosen_fix = fix_editor(spec.space, result.model.variables_, proposed_fix, best["point"], str(version))
    next_formula = next_model_input(decision, chosen_fix, str(version))
    accept, reject = st.columns(2)
    note = st.text_input("Note (optional)", key="decision_note")
    if accept.button("Accept decision", type="primary", key="accept_decision"):
        with guard():
            final = decision.settle(actor, fix=chosen_fix, formula=next_formula, note=note or None)
            session.record_decision(final, step, analysis=result, design=design_id, fixed=fixed)
            flash(f"Decision {escape_md(final.status)}: fixed {escape_md(decision_fix_text(final.chosen))}.")
            st.rerun()
    if reject.button("Reject", key="reject_decision"):
        with guard():
            session.record_decision(decision.reject(actor, note=note or None), step)
            flash("Decision rejected and recorded.")
            st.rerun()

decisions_log()
study_notes_editor(session, key="analyze")
