"""The Surrogates page's DiffTune learning section (difftune.md §1), in the pipeline's order: simulated data sets
of random tables, surrogates trained on them, and experiments that learn a table through a frozen surrogate and
validate it in the real simulator against every baseline. Each action is one workflow call; the figures come
from :mod:`engine.surrogates.difftune.learning_plots`.

Training runs as a background job (hours at DiffTune's sizes: the page stays usable and the run survives a
reload); a data set and an experiment run in the script with their progress shown, as the CLI runs them.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app.components import flash, guard, show_flash
from app.difftune.simulator import ACCURACY_FORMAT
from app.escape import code_md, escape_md
from app.jobs import Job, get_job, start_job
from engine.surrogates.difftune import sampling
from engine.surrogates.difftune.learning_plots import changes_heatmap, search_curves_figure, table_changes, training_figure
from engine.surrogates.difftune.plots import scatter_figure
from storage import Store
from workflows.difftune.dataset import SOURCES, simulate_dataset
from workflows.difftune.views import (
    MODEL_ARCHS,
    REFERENCES,
    compared_tables,
    dataset_overview,
    experiment_results,
    learning_unavailable,
    surrogate_overview,
)

SAMPLING = (f"Each sample is one block of the data set with a random table for its opcodes (DiffTune's §3): latency, "
            f"µops and the 7 ReadAdvance slots uniform in {sampling.LATENCY[0]}..{sampling.LATENCY[1]}, "
            f"{sampling.PORT_PICKS[0]}..{sampling.PORT_PICKS[1]} picks of single ports with "
            f"{sampling.PORT_CYCLES[0]}..{sampling.PORT_CYCLES[1]} cycles, dispatch width "
            f"{sampling.DISPATCH_WIDTH[0]}..{sampling.DISPATCH_WIDTH[1]}, ROB {sampling.ROB_SIZE[0]}..{sampling.ROB_SIZE[1]}; "
            "its target is the real simulator's cycles per 100 iterations. The seed alone rebuilds the table.")
KINDS = {"recovery": "truth = the simulator with the data set's defaults; DiffTune starts from a random table, and "
                     "each learnt field's error against the truth is reported",
         "cross-arch": "truth = llvm-mca-19 for another -mcpu (skylake by default); starts from the data set's "
                       "defaults and from a random table",
         "this-cpu": "truth = blocks measured on a CPU (a blocks export CSV, or this CPU's stored ones); llvm-mca-19 "
                     "itself is the baseline to beat"}
REFERENCE_LABELS = {"start": "its start", "defaults": "the data set's defaults"}
MAPE_FORMAT = {"val_mape": "{:.2%}", "test_mape": "{:.2%}", "minutes": "{:.1f}"}
RECOVERY_FORMAT = "{:.3f}"
#: Training steps between two points of the live loss chart.
LIVE_EVERY = 20
_TRAINING = "_dt_training_shown"


def render(store: Store) -> None:
    show_flash()
    _datasets(store)
    missing = learning_unavailable()
    if missing:
        st.info(missing)  # markdown: the workflow's own sentence (learning_unavailable), with its commands in code
        return
    _surrogates(store)
    _experiments(store)


# -- data sets ------------------------------------------------------------------------------------------------


def _datasets(store: Store) -> None:
    st.header("Simulated data sets")
    st.caption(SAMPLING)
    frame = dataset_overview(store)
    if frame.empty:
        st.info("No simulated data set yet: create one below, or run "
                "`tunelab difftune dataset --arch haswell --samples 100000 --workers 2`.")
    else:
        st.dataframe(frame, hide_index=True, width="stretch", key="dt_datasets", column_config={
            "samples_done": st.column_config.NumberColumn("samples done", format="localized"),
            "samples_wanted": st.column_config.NumberColumn("samples wanted", format="localized"),
            "updated_at": st.column_config.DatetimeColumn("updated", format="YYYY-MM-DD HH:mm")})
    with st.form("dt_dataset_form"):
        a, b, c, d, e = st.columns([2, 2, 2, 1, 2])
        arch = a.selectbox("Model (-mcpu)", MODEL_ARCHS, key="dt_ds_arch")
        samples = b.number_input("Samples (in all)", 1, 10**9, 100_000, step=10_000, key="dt_ds_samples",
                                 help="A data set of that name continues up to this count (the shards are kept).")
        source = c.radio("Blocks", SOURCES, horizontal=True, key="dt_ds_source",
                         format_func={"anchor": "anchor sample", "measured": "measured on this CPU"}.get)
        workers = d.number_input("Workers", 1, os.cpu_count() or 1, 1, key="dt_ds_workers")
        name = e.text_input("Name", placeholder="default: ARCH-BLOCKS", key="dt_ds_name",
                            help="An existing name (same arch) extends that data set.")
        submitted = st.form_submit_button("Simulate", type="primary")
    if submitted:
        bar = st.progress(0.0, text="Choosing and decoding the blocks…")
        with guard():
            done = simulate_dataset(store, arch=arch, samples=int(samples), source=source, name=name.strip() or None,
                                    workers=int(workers),
                                    progress=lambda n, wanted: _samples_done(bar, n, wanted))
            flash(f"Data set '{escape_md(done.name)}': {done.samples_done:,} samples over {done.blocks:,} blocks "
                  f"({done.simulated:,} simulated now in {done.seconds:.0f} s).")
            st.rerun()


def _samples_done(bar: DeltaGenerator, done: int, wanted: int) -> None:
    bar.progress(done / wanted, text=f"{done:,} of {wanted:,} samples")


# -- surrogates -----------------------------------------------------------------------------------------------


def _surrogates(store: Store) -> None:
    from workflows.difftune.surrogate import training_curves  # torch: imported once learning_unavailable() is None

    st.header("Surrogates")
    frame, datasets = surrogate_overview(store), dataset_overview(store)["name"].tolist()
    if frame.empty:
        st.info("No surrogate trained yet: train one below, or run `tunelab difftune train --dataset NAME`."
                if datasets else "Training needs a simulated data set (above).")
    else:
        st.dataframe(frame.style.format(MAPE_FORMAT, na_rep="–"), hide_index=True, width="stretch", key="dt_surrogates",
                     column_config={"epochs_done": "epochs", "val_mape": "validation MAPE", "test_mape": "test MAPE"})
    if datasets:
        _training_form(store, datasets)
    if frame.empty:
        return
    names = frame["name"].tolist()
    name = st.selectbox("Training curves of", names, index=len(names) - 1, key="dt_sg_pick")
    with guard():
        st.plotly_chart(training_figure(training_curves(store, name)), width="stretch", key="dt_sg_curves")


def _training_form(store: Store, names: list[str]) -> None:
    with st.form("dt_train_form"):
        a, b = st.columns(2)
        data_name = a.selectbox("Data set", names, index=len(names) - 1, key="dt_tr_dataset")
        name = b.text_input("Name", placeholder="default: DATASET-hHIDDEN", key="dt_tr_name",
                            help="An existing name continues its training (same sizes) up to the epochs given.")
        c, d, e, f, g = st.columns(5)
        epochs = c.number_input("Epochs (in all)", 1, 100_000, 6, key="dt_tr_epochs")
        embedding = d.number_input("Embedding", 1, 4096, 64, key="dt_tr_embedding")
        hidden = e.number_input("Hidden (LSTM width)", 1, 4096, 64, key="dt_tr_hidden")
        layers = f.number_input("Layers", 1, 16, 2, key="dt_tr_layers")
        batch = g.number_input("Batch", 1, 1_000_000, 256, key="dt_tr_batch")
        bound = st.checkbox("Throughput bound under the prediction", value=True, key="dt_tr_bound",
                            help="The network corrects the larger of the dispatch and busiest-port limits computed "
                                 "from the table, instead of predicting cycles alone (DiffTune's own head): far "
                                 "lower MAPE for the same training.")
        submitted = st.form_submit_button("Train", type="primary")
    key = f"difftune-train:{store.path}"
    if submitted:
        running = get_job(key)
        if running is not None and running.running:
            st.warning(f"A surrogate is training already ({escape_md(running.label)}).")
        else:
            settings = {"embedding": int(embedding), "hidden": int(hidden), "layers": int(layers), "batch": int(batch),
                        "bound": bool(bound)}
            start_job(key, f"training on {data_name}",
                      lambda job: _train(job, store, data_name, name.strip() or None, int(epochs), settings))
            st.rerun()
    job = get_job(key)
    if job is not None and (job.running or st.session_state.get(_TRAINING)):
        _training_live(key)
    elif job is not None and job.error:
        st.error(f"Training failed: {escape_md(job.error)}")


def _train(job: Job, store: Store, data_name: str, name: str | None, epochs: int, settings: dict[str, Any]) -> Any:
    """The training, leaving (latest step record, epochs) in ``job.progress`` and every ``LIVE_EVERY``-th step
    (and each epoch's last, with its validation MAPE) in ``job.rows`` for the live chart."""
    from engine.surrogates.difftune.train import TrainConfig
    from workflows.difftune.surrogate import train_surrogate

    def step(record: dict[str, Any]) -> None:
        job.progress = (record, epochs)
        if record["step"] % LIVE_EVERY == 0 or pd.notna(record.get("val_mape")):
            job.rows.append(record)

    return train_surrogate(store, dataset_name=data_name, name=name, epochs=epochs, config=TrainConfig(**settings),
                           on_step=step)


@st.fragment(run_every=1.0)
def _training_live(key: str) -> None:
    job = get_job(key)
    if job is None:
        return
    if job.running:
        st.session_state[_TRAINING] = True
        if job.progress is None:
            st.progress(0.0, text="Loading the data set and building the vocabulary…")
        else:
            record, epochs = job.progress
            fraction = min(1.0, record["step"] / (epochs * record["batches"]))
            eta = job.eta_seconds(fraction)
            st.progress(fraction, text=f"epoch {record['epoch']} of {epochs}, step {record['step']:,}: loss "
                                       f"{record['loss']:.4f}, moving average {record['ema']:.4f}"
                                       + (f" — about {eta / 60:.0f} min left" if eta else ""))
        if job.rows:
            st.plotly_chart(training_figure(pd.DataFrame(job.rows)), width="stretch", key="dt_tr_live")
    elif st.session_state.pop(_TRAINING, False):
        if job.error is None:
            done = job.result
            scores = ", ".join(f"{label} MAPE {value:.2%}" for label, value in
                               (("validation", done.val_mape), ("test", done.test_mape)) if value is not None)
            flash(f"Surrogate '{escape_md(done.name)}' trained to epoch {done.epochs_done:d} on {done.samples:,} samples; "
                  f"{escape_md(scores)}.")
        st.rerun()


# -- experiments ----------------------------------------------------------------------------------------------


def _experiments(store: Store) -> None:
    from engine.strategies.registry import parse_names
    from workflows.difftune.experiments import run, stored_experiments  # torch, as above

    st.header("Experiments")
    surrogates = surrogate_overview(store)["name"].tolist()
    if not surrogates:
        st.info("Experiments need a trained surrogate (above), then run here or with "
                "`tunelab difftune experiment recovery --surrogate NAME`.")
        return
    with st.form("dt_experiment_form"):
        a, b, c = st.columns([3, 2, 2])
        kind = a.selectbox("Experiment", list(KINDS), key="dt_ex_kind",
                           help="\n".join(f"- **{k}**: {text}" for k, text in KINDS.items()))
        surrogate = b.selectbox("Surrogate", surrogates, index=len(surrogates) - 1, key="dt_ex_surrogate")
        arch = c.selectbox("Truth's -mcpu", ["default", *MODEL_ARCHS], key="dt_ex_arch",
                           help="cross-arch: llvm-mca-19's arch (default skylake); this-cpu: the measured CPU's "
                                "-mcpu (default: this machine's, when it measured the blocks).")
        measured = st.text_input("Measured blocks (this-cpu)", key="dt_ex_measured",
                                 placeholder="a tunelab blocks export CSV; empty: this CPU's stored measurements")
        d, e, f = st.columns(3)
        budget = d.number_input("Budget (simulator calls; 0: the data set's size)", 0, 10**10, 0, key="dt_ex_budget",
                                help="For greedy search and the strategies: DiffTune's own cost is its data set.")
        strategies = e.text_input("Strategies", "RS,BO", key="dt_ex_strategies",
                                  help="Tunelab strategies calibrating a few parameters, comma-separated.")
        epochs = f.number_input("Learning epochs (0: about 1,000 steps)", 0, 100_000, 0, key="dt_ex_epochs")
        submitted = st.form_submit_button("Run experiment", type="primary")
    if submitted and kind is not None and surrogate is not None:
        status = st.status(f"Running the {escape_md(kind)} experiment with '{escape_md(surrogate)}'…", expanded=True)
        with guard():
            done = run(store, kind, surrogate, arch=None if arch == "default" else arch, measured=measured.strip() or None,
                       budget=int(budget) or None, strategies=tuple(parse_names(strategies)),
                       learn_epochs=int(epochs) or None, progress=lambda line: status.write(escape_md(line)))
            st.session_state["dt_ex_pick"] = done.id
            flash(f"Experiment {done.id:d} ({escape_md(done.kind)}) stored: truth = {escape_md(done.truth)}; "
                  f"{done.seconds:.0f} s.")
            st.rerun()
        status.update(label="The experiment stopped.", state="error")
    _calibration_form(store, surrogates)
    stored = stored_experiments(store)
    if stored.empty:
        st.info("No experiment stored yet: run one above, or "
                f"{code_md(f'tunelab difftune experiment recovery --surrogate {surrogates[-1]}')}.")
        return
    labels = {int(r.id): f"{r.id}: {r.kind} with '{r.surrogate}', truth {r.summary['truth']} ({r.created_at:%Y-%m-%d %H:%M})"
              for r in stored.itertuples()}
    pick = st.selectbox("Stored experiment", list(labels), format_func=lambda i: labels[i], key="dt_ex_pick")
    if pick is None:
        return
    with guard():
        _experiment(store, *experiment_results(store, pick))


def _calibration_form(store: Store, surrogates: list[str]) -> None:
    from workflows.difftune.experiments import calibration_study

    with st.expander("Calibration as a tuning study (replay strategies on it in Compare)"):
        st.caption("A few parameters of the start table become integer factors; every configuration of their grid is "
                   "simulated on the experiment's training blocks and its MAPE stored, as a table study. Compare "
                   "then replays random search, BO, DLMT… on it, as on any measured table.")
        with st.form("dt_calibration_form"):
            a, b, c = st.columns([2, 2, 3])
            kind = a.selectbox("Experiment", list(KINDS), key="dt_cal_kind")
            surrogate = b.selectbox("Surrogate (its blocks and split)", surrogates, index=len(surrogates) - 1,
                                    key="dt_cal_surrogate")
            name = c.text_input("Study name", "difftune calibration", key="dt_cal_name")
            parameters = st.text_input("Parameters", key="dt_cal_parameters",
                                       placeholder="empty: dispatch_width, rob_size, latency and µops of the most "
                                                   "common opcode; else e.g. dispatch_width, latency:ADD64rr")
            measured = st.text_input("Measured blocks (this-cpu)", key="dt_cal_measured",
                                     placeholder="a tunelab blocks export CSV; empty: this CPU's stored measurements")
            blocks = st.number_input("Training blocks per configuration", 10, 100_000, 500, key="dt_cal_blocks")
            submitted = st.form_submit_button("Build the calibration study")
        if submitted and kind is not None and surrogate is not None:
            with guard(), st.spinner("Simulating every configuration of the grid…"):
                names = [p.strip() for p in parameters.split(",") if p.strip()] or None
                done = calibration_study(store, kind, surrogate, name=name.strip(), parameters=names,
                                         measured=measured.strip() or None, blocks=int(blocks))
                st.success(f"Table study '{escape_md(done.name)}': {done.configurations:,} configurations, MAPE "
                           f"{done.start_mape:.2%} at the start and {done.best_mape:.2%} at the grid's best. "
                           "Open it on the Compare page.")


def _experiment(store: Store, row: dict[str, Any], predictions: pd.DataFrame) -> None:
    summary = row["summary"]
    blocks, settings = summary["blocks"], summary["settings"]
    st.caption(escape_md(f"Truth: {summary['truth']}; data set '{settings['dataset']}' ({summary['arch']}): "
                         f"{blocks['train']:,} training and {blocks['test']:,} test blocks; budget {settings['budget']:,} "
                         f"simulator calls, learning rate {settings['lr']}, seed {settings['seed']}. Every method is "
                         "scored by the real simulator on the test blocks."))
    accuracy = pd.DataFrame(summary["accuracy"]).sort_values("mape")
    left, right = st.columns([5, 3])
    left.dataframe(accuracy.style.format(ACCURACY_FORMAT), hide_index=True, width="stretch", key="dt_ex_accuracy")
    costs = pd.DataFrame({"method": list(summary["costs"]), "simulator calls": list(summary["costs"].values())})
    right.dataframe(costs, hide_index=True, width="stretch", key="dt_ex_costs")
    if summary.get("recovery"):
        st.subheader("Parameter recovery (mean absolute error per field against the truth's table)")
        recovery = pd.DataFrame(summary["recovery"])
        st.dataframe(recovery.style.format(RECOVERY_FORMAT, subset=recovery.columns[1:]), hide_index=True,
                     width="stretch", key="dt_ex_recovery")
    st.subheader("Validation: predicted against true cycles (test blocks)")
    ranked = accuracy["predictor"].tolist()
    default = [p for p in ranked if p.startswith("DiffTune")] + [p for p in ranked if not p.startswith("DiffTune")][:2]
    shown = st.multiselect("Predictors", ranked, default=default, key=f"dt_ex_predictors_{row['id']}")
    st.plotly_chart(scatter_figure(predictions[predictions["predictor"].isin(shown)]), width="stretch", key="dt_ex_scatter")
    st.subheader("Learning curves")
    st.plotly_chart(search_curves_figure(summary["curves"]), width="stretch", key="dt_ex_curves")
    _table_changes(store, row)


def _table_changes(store: Store, row: dict[str, Any]) -> None:
    st.subheader("What a learnt table changed")
    methods = list(row["summary"]["tables"])
    a, b = st.columns(2)
    method = a.selectbox("Learnt table", methods, key=f"dt_ex_method_{row['id']}",
                         index=methods.index("DiffTune (defaults start)") if "DiffTune (defaults start)" in methods else 0)
    reference = b.radio("Compared with", REFERENCES, format_func=REFERENCE_LABELS.get, horizontal=True,
                        key="dt_ex_reference")
    learned, start, label = compared_tables(store, row, method, reference)
    changes = table_changes(learned, start)
    moved = (f"below, the {changes['key'].nunique()} opcodes whose fields moved most (colour: learnt − compared; hover "
             "for both values)." if len(changes) else "no opcode row moved.")
    st.caption(escape_md(f"{method} against {label}: dispatch width {start.dispatch_width} → {learned.dispatch_width}, "
                         f"ROB {start.rob_size} → {learned.rob_size}; {moved}"))
    st.plotly_chart(changes_heatmap(changes), width="stretch", key="dt_ex_heatmap")
    stored_name = row["summary"]["tables"][method]
    c, d = st.columns(2)
    c.download_button("Learnt table (JSON)", json.dumps(learned.to_document(), indent=1), file_name=f"{stored_name}.json",
                      mime="application/json", on_click="ignore", key="dt_ex_json")
    d.download_button("Learnt table (DiffTune key-value .txt)", learned.to_key_values(), file_name=f"{stored_name}.txt",
                      mime="text/plain", on_click="ignore", key="dt_ex_txt",
                      help="DiffTune's -parameters file; also a simulator runner's table (tunelab difftune table export).")
