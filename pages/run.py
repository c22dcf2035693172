"""Run: measure a design's pending configurations, or tune with a strategy; live progress, results as they arrive,
and cancel."""

import pandas as pd
import plotly.express as px
import streamlit as st

from app.components import guard, show_flash, study_picker
from app.escape import code_md, escape_md
from app.jobs import Job, get_job, start_job
from app.state import get_store
from app.strategy_options import option_widgets
from engine.analysis import plots
from engine.execution.registry import EXECUTORS
from engine.io.report_html import progress_data
from engine.strategies import from_form
from engine.strategies.registry import describe
from workflows import StudySession
from workflows.session import Tuned

store = get_store()
st.title("Run")
st.caption("Measure the configurations a design asked for, or let a strategy choose them within a budget. Each result "
           "is stored the moment it arrives: cancelling, or a crash, loses nothing already measured, and running again "
           "resumes.")
show_flash()
study = study_picker(store)
if study is None:
    st.stop()
spec = study.spec

mode = st.radio("What to run", ["design", "tune"], horizontal=True, key="run_mode",
                format_func={"design": "Measure a design", "tune": "Tune with a strategy"}.get)
left, right = st.columns(2)
executor_name = left.radio("Executor", list(EXECUTORS), format_func=EXECUTORS.get, key="run_executor")
scheduler = left.text_input("Dask scheduler", placeholder="tcp://127.0.0.1:8786 (empty: a local cluster)",
                            key="run_scheduler") if executor_name == "dask" else None

if mode == "design":
    designs = store.designs(study.name)
    if designs.empty:
        st.info("This study has no design yet: build one on the **Design** page, or tune with a strategy.")
        st.stop()
    labels = {int(d.id): f"Design {d.id}: {d.name} ({d.kind}) — {d.rows} rows, {d.pending} pending"
              for d in designs.itertuples()}
    pending_ids = [i for i, d in zip(designs["id"], designs["pending"]) if d > 0]
    default = int(max(pending_ids)) if pending_ids else int(designs["id"].max())
    # Keyed by its labels, so the pending counts are redrawn after a run; the choice is kept beside it.
    chosen = f"_run_design_{study.id}"
    start = st.session_state[chosen] if st.session_state.get(chosen) in labels else default
    design_id = right.selectbox("Design", list(labels), index=list(labels).index(start), format_func=labels.get,
                                key=f"run_design_{study.id}_{abs(hash(tuple(labels.values())))}")
    st.session_state[chosen] = design_id
    repeats = right.number_input("Repeats per configuration", min_value=1, max_value=100,
                                 value=int(spec.runner.get("repeats", 1)), key="run_repeats")
    right.caption(f"Runner: {code_md(spec.runner.get('kind'))}. Repeats already stored count: a configuration "
                  "measured 3 times and asked for 5 gets 2 more.")
    job_key, label = f"run:{study.id}:{design_id}", labels[design_id]
else:
    catalogue = {row["name"]: row for row in describe() if row["available"]}
    strategy = right.selectbox("Strategy", list(catalogue), index=list(catalogue).index("AUTO"), key="run_strategy",
                               help="\n".join(f"- **{n}**: {row['summary']}" for n, row in catalogue.items()))
    a, b = right.columns(2)
    budget = a.number_input("Budget (configurations)", 1, 100_000, 60, key="run_budget")
    seed = b.number_input("Seed", 0, 2**31 - 1, 0, key="run_seed")
    auto = "auto" in catalogue[strategy]["options"] and right.checkbox(
        "Accept each decision", value=True, key="run_auto",
        help="DLMT's steps (factors to fix, terms to keep) taken as proposed and logged. Unticked, the run stops at "
             "each one: answer it on the Analyze page, then start again here to go on.")
    with st.expander(f"{escape_md(strategy)} options"):
        option_values = option_widgets(strategy, "run_opt", exclude=("auto",))
    right.caption(f"Runner: {code_md(spec.runner.get('kind'))}. With several workers the strategy proposes as many "
                  "configurations as they take. What is stored answers it again without measuring.")
    job_key, label = f"tune:{study.id}", f"{strategy} on {study.name}"


def echo_row(job: Job, config: dict, result) -> None:
    job.rows.append({**config, "repeat": result.repeat, "value": result.value, "status": result.status,
                     "error": result.error})


def campaign_work(job: Job, executor: str, scheduler: str | None, repeats: int) -> object:
    def started(campaign) -> None:
        job.cancel_hook = campaign.cancel

    return StudySession(store, study.name).measure(
        design_id, executor=executor, scheduler=scheduler, repeats=repeats,
        echo=lambda config, result: echo_row(job, config, result),
        on_progress=lambda progress: setattr(job, "progress", progress), on_start=started).progress


def tuning_work(job: Job, executor: str, scheduler: str | None, name: str, budget: int, seed: int, auto: bool,
                options: dict) -> Tuned:
    def started(campaign) -> None:
        job.cancel_hook = campaign.cancel

    return StudySession(store, study.name).tune(
        name, budget, seed=seed, options=options, auto=auto, echo=lambda config, result: echo_row(job, config, result),
        executor=executor, scheduler=scheduler, on_progress=lambda progress: setattr(job, "progress", progress),
        on_start=started)


job = get_job(job_key)
if job is None or not job.running:
    if st.button("Start measuring" if mode == "design" else "Start tuning", type="primary", key="run_start"):
        with guard():
            if mode == "design":
                start_job(job_key, label, lambda j: campaign_work(j, executor_name, scheduler, int(repeats)))
            else:
                options = from_form(strategy, option_values)  # checked here: a refused value is one line, no job
                start_job(job_key, label, lambda j: tuning_work(j, executor_name, scheduler, strategy, int(budget),
                                                                int(seed), auto, options))
            st.rerun()


def refresh_once_finished(job: Job) -> None:
    """Rerun the whole page once after a job ends, so the design picker's pending counts and the
    design rows are read after its last result (however quickly it finished)."""
    seen = f"_run_refreshed_{job_key}"
    if not job.running and st.session_state.get(seen) != job.started:
        st.session_state[seen] = job.started
        st.rerun()


def show(job: Job) -> None:
    progress = job.progress
    if job.running and (progress is None or not progress.total):
        st.progress(0.0, text=f"Starting {escape_md(job.label)}: preparing the runner and the executor; results follow…")
    if progress is not None and progress.total:
        eta = job.eta_seconds(progress.fraction) if job.running else None
        text = f"{progress.completed}/{progress.total} configurations"
        if job.running and progress.workers > 1:
            text += f" on {progress.workers} workers"
        if progress.skipped:
            text += f" ({progress.skipped} already measured)"
        if eta is not None:
            text += f" — about {eta:.0f} s left"
        st.progress(progress.fraction, text=text)
    if job.running:
        if st.button("Cancel", key="run_cancel"):
            job.cancel()
            st.warning("Cancelling: measurements already running will still be stored.")
    elif job.error:
        st.error(escape_md(job.error))
    elif progress is not None:
        state = "Cancelled" if progress.cancelled else "Done"
        st.success(f"{escape_md(state)}: {progress.results:,} results stored ({progress.ok:,} ok, {progress.not_ok:,} failed) "
                   f"in {progress.elapsed_s:.1f} s.")
    if not job.running and isinstance(job.result, Tuned):
        show_tuned(job.result)
    if job.rows:
        rows = pd.DataFrame(job.rows)
        failed = rows[rows["status"] != "ok"]
        if len(failed):
            st.error(f"{len(failed)} failed measurement(s); first error: {escape_md(failed['error'].iloc[0])}")
        a, b = st.columns([3, 2])
        a.dataframe(rows.iloc[::-1], hide_index=True, width="stretch", height=320, key="run_results")
        ok = rows[rows["status"] == "ok"].reset_index(drop=True)
        if len(ok):
            figure = px.scatter(ok, x=ok.index + 1, y="value", labels={"x": "measurement", "value": spec.objective},
                                title="Results as they arrive")
            b.plotly_chart(figure, width="stretch", key="run_plot")


def show_tuned(tuned: Tuned) -> None:
    """How a tuning run ended: its best configuration, and the decision it waits for, if any."""
    result = tuned.result
    if result.best is not None:
        config = ", ".join(f"{k}={v}" for k, v in result.best["config"].items())
        st.info(f"Best {escape_md(spec.objective)} = {result.best['value']:.6g} at {escape_md(config)}; "
                f"{result.used:d} of {result.budget:d} configurations used ({result.measurements:d} measurements now, "
                f"{result.reused:d} stored before).")
    if tuned.waiting is not None:
        st.warning(f"Step {tuned.step:d} waits for your decision: answer it on the **Analyze** page, then start "
                   "again here to go on.\n\n" + "\n".join(f"- {escape_md(line)}" for line in tuned.waiting.explanation))


@st.fragment(run_every=1.0)
def live() -> None:
    current = get_job(job_key)
    if current is None:
        return
    refresh_once_finished(current)
    show(current)


if job is not None:
    refresh_once_finished(job)
    if job.running:
        live()
    else:
        show(job)

history = progress_data(spec, StudySession(store, study.name).results())
if len(history):
    st.plotly_chart(plots.history_figure(history, spec.objective), width="stretch", key="run_history")

if mode == "design":
    st.subheader("Design rows")
    rows = store.design_rows(study.name, design_id)
    st.dataframe(rows, hide_index=True, width="stretch", key="run_design_rows")
