"""Compare: replay search strategies on a measured table, side by side, as in the CCGrid'19 table."""

import time

import streamlit as st

from app.compare_progress import CompareProgress
from app.components import STUDY_KEY, comparison_summary, flash, guard, remembered, show_flash
from app.escape import escape_md
from app.jobs import Job, get_job, start_job
from app.state import get_store
from app.strategy_options import option_editor
from engine.compare.plots import (
    best_so_far_data,
    best_so_far_figure,
    budget_slowdown_data,
    budget_slowdown_figure,
    ecdf_data,
    ecdf_figure,
    histogram_data,
    histogram_figure,
    strategy_colours,
)
from engine.compare.presets import PRESETS
from engine.compare.summary import header, with_paper
from engine.strategies import from_form, strategy_class
from engine.strategies.registry import describe
from workflows.compare import (
    DEFAULT_STRATEGIES,
    add_peer_run,
    compare,
    open_comparison,
    peer_space,
    saved_comparisons,
    suggested_options,
    table_study,
)

#: The status from the click on until the first runs end (loading the table, starting workers).
STARTING = "Starting: preparing the table study…"

store = get_store()
st.title("Compare")
st.caption("Replay strategies on an exhaustively measured table: each 'measurement' is a look-up, so hundreds of "
           "repetitions show each strategy's slowdown (returned time ÷ optimum) and the budget it spent.")
show_flash()

studies = store.list_studies()
tables = studies.loc[studies["runner"] == "table", "name"].tolist()
if not tables:
    st.info("No table study yet: import a measured CSV or a Kernel Tuner cache on the **Studies** page.")
    st.stop()
# Compare keeps its own choice: picking a table here does not switch the study the other pages work on.
name = st.selectbox("Table study", tables, key="cmp_study",
                    index=remembered(tables, STUDY_KEY, st.session_state.get("_cmp_study"), st.session_state.get(STUDY_KEY)))
st.session_state["_cmp_study"] = name
st.query_params[STUDY_KEY] = name

catalogue = {row["name"]: row for row in describe()}
runnable = [n for n, row in catalogue.items() if row["available"]]
with st.expander("Strategy options (over the preset; an untouched option keeps the preset's value)"):
    suggested = suggested_options(store, name)
    option_values = option_editor("cmp_opt", {s: f"cmp_opt_{name}" if s in suggested else "cmp_opt" for s in runnable},
                                  suggested)
with st.form("cmp_form"):
    chosen = st.multiselect("Strategies", runnable, default=[s for s in DEFAULT_STRATEGIES if s in runnable],
                            key="cmp_strategies", help="\n".join(f"- **{n}**: {row['summary']}" for n, row in catalogue.items()))
    a, b, c, d = st.columns(4)
    reps = a.number_input("Repetitions", 1, 5000, 20, key="cmp_reps")
    budget = b.number_input("Budget (measurements)", 1, 100_000, 125, key="cmp_budget")
    jobs = c.number_input("Worker processes", 1, 16, 2, key="cmp_jobs")
    seed = d.number_input("Seed", 0, 2**31 - 1, 0, key="cmp_seed")
    preset = st.radio("Per-strategy settings", PRESETS, horizontal=True, key="cmp_preset",
                      format_func={"paper": "The paper's (as `tunelab bench`)", "none": "Each strategy's defaults"}.get,
                      help="paper: the CCGrid'19 settings and per-strategy budgets; none: every strategy's defaults "
                           "with the full budget.")
    # Empty unless the person types a name: the workflow names the comparison after the strategies that ran. Keyed by
    # the table, so a name typed for one table study is not offered for another.
    label = st.text_input("Name", key=f"cmp_name_{name}", placeholder=f"{name}: the strategies run",
                          help="Left empty, the comparison is named after the table study and the strategies that ran.")
    submitted = st.form_submit_button("Run comparison", type="primary")

job_key = f"compare:{name}"
#: Set from the click on while this table's comparison runs, so its end is announced once, on this table.
was_running = f"_cmp_was_running:{name}"


def benchmark_work(job: Job, strategies: list[str], reps: int, budget: int, jobs: int, seed: int, preset: str,
                   options: dict, label: str) -> int | None:
    """The comparison, leaving in ``job.progress`` a sentence until the first run ends (loading the table and
    starting workers take seconds), then its CompareProgress, fed after every run."""
    table = table_study(store, name)
    job.progress = (f"Starting: {jobs} worker processes are loading the table…" if jobs > 1
                    else f"Starting: running strategy {strategies[0]}…")
    counts = CompareProgress([strategy_class(s).name for s in strategies], reps)

    def said(done: int, total: int, strategy: str) -> None:
        counts(done, total, strategy)
        job.progress = counts

    return compare(table, strategies, reps=reps, budget=budget, jobs=jobs, seed=seed, preset_name=preset,
                   options=options, progress=said, store=store, name=label, study=name).stored_id


def status(job: Job) -> tuple[float, str]:
    """The progress bar's fraction and text: a 'Starting' sentence (with the seconds so far) before the first
    run ends, then the runs done, each unfinished strategy's count and the time left."""
    if not isinstance(job.progress, CompareProgress):
        return 0.0, f"{job.progress or STARTING} ({time.time() - job.started:.0f} s)"
    counts = job.progress
    return counts.fraction, counts.text(job.eta_seconds(counts.fraction))


if submitted:
    running = get_job(job_key)
    if running is not None and running.running:
        st.warning("A comparison on this table is already running.")
    elif not chosen:
        st.error("strategies: choose at least one")
    else:
        with guard():
            options = {strategy: from_form(strategy, option_values[strategy]) for strategy in chosen}
            start_job(job_key, label or name, lambda job: benchmark_work(job, list(chosen), int(reps), int(budget), int(jobs),
                                                                         int(seed), preset, options, label))
            st.session_state[was_running] = True  # announced and opened even if it ends before the rerun
            st.rerun()


@st.fragment(run_every=1.0)
def live() -> None:
    job = get_job(job_key)
    if job is None:
        return
    if job.running:
        fraction, text = status(job)
        st.progress(fraction, text=text)
        st.session_state[was_running] = True
    elif st.session_state.pop(was_running, False):
        if job.error:
            flash(f"Comparison failed: {escape_md(job.error)}")
        else:
            st.session_state["cmp_open"] = job.result
            flash(f"Comparison saved (id {escape_md(job.result)}).")
        st.rerun()  # the whole page, so the new comparison replaces the one shown before


job = get_job(job_key)
if job is not None and (job.running or st.session_state.get(was_running)):
    live()
elif job is not None and job.error:
    st.error(escape_md(job.error))

saved = saved_comparisons(store, name)
if saved.empty:
    st.stop()
st.subheader("Saved comparisons")
options = saved["id"].tolist()
opened = st.session_state.pop("cmp_open", None)
if opened in options:  # a comparison just finished: open it, whatever was open before
    st.session_state["cmp_open_select"] = opened
choice = st.selectbox("Open", options,
                      format_func=lambda i: f"#{i} {saved.set_index('id').loc[i, 'name']} "
                                            f"({saved.set_index('id').loc[i, 'created_at']:%Y-%m-%d %H:%M})",
                      key="cmp_open_select")
record, comparison = open_comparison(store, choice)
summary = comparison_summary(comparison, store.path, choice)
paper = st.checkbox("Show the paper's Laplacian figures beside ours", value="time_per_pixel" in name.lower()
                    or "laplacian" in name.lower(), key="cmp_paper")
shown = with_paper(summary) if paper else summary
headers = {column: header(column) for column in shown.columns}  # words on screen, snake_case in the data
st.dataframe(shown.style.format(precision=3, na_rep=""), hide_index=True, width="stretch", key="cmp_table",
             column_config={column: st.column_config.Column(label, help=tip) for column, (label, tip) in headers.items()})
st.caption(f"{escape_md(record['params']['reps'])} repetitions, budget {escape_md(record['params']['budget'])}, seed "
           f"{escape_md(record['params']['seed'])}. Slowdown = the returned configuration's value ÷ the table's optimum.")
if "peers" in record["params"]:
    peers = record["params"]["peers"]
    st.caption(f"{escape_md(', '.join(peers['strategies']))}: a peer run ({escape_md(peers['file'])}, space "
               f"{escape_md(peers['space'])}), cut at the same budget.")

with st.expander("Add a peer run to this comparison (Kernel Tuner's and Optuna's strategies: "
                 "`python bench/peers.py --out FILE`)"), st.form("cmp_peers"):
    st.caption(f"Its runs are cut at this comparison's budget ({escape_md(record['params']['budget'])}) and shown "
               "beside its strategies, in a new comparison.")
    peer_file = st.text_input("File written by bench/peers.py --out", key="cmp_peer_file")
    # Keyed by the table, so the space follows a change of table study.
    peer_space_name = st.text_input("Space (this table study's name in that file)", value=peer_space(store, name),
                                    key=f"cmp_peer_space_{name}")
    if st.form_submit_button("Import"):
        with guard():
            st.session_state["cmp_open"] = add_peer_run(store, choice, peer_file, space=peer_space_name)
            flash("Peer run added to the comparison.")
            st.rerun()

runs = record["runs"]
colours = strategy_colours(comparison.strategies)  # one colour per strategy, the same in every figure
hist_tab, ecdf_tab, curve_tab, scatter_tab = st.tabs(["Histograms", "ECDF", "Best so far", "Budget vs slowdown"])
with hist_tab:
    st.plotly_chart(histogram_figure(histogram_data(runs), colours=colours), width="stretch", key="cmp_hist")
with ecdf_tab:
    st.plotly_chart(ecdf_figure(ecdf_data(runs), colours=colours), width="stretch", key="cmp_ecdf")
with curve_tab:
    st.plotly_chart(best_so_far_figure(best_so_far_data(runs), colours=colours), width="stretch", key="cmp_curve")
with scatter_tab:
    st.plotly_chart(budget_slowdown_figure(*budget_slowdown_data(runs), colours=colours), width="stretch", key="cmp_scatter")
