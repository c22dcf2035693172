"""Export: the best configuration as a file a build can read, a study report, and the raw data."""

import io

import pandas as pd
import streamlit as st

from app.components import guard, show_flash, study_picker
from app.state import db_path, get_store
from engine.analysis import LinearModel, predict, predicted_minimum
from engine.analysis.study_data import analysis_frame, candidate_set
from engine.io.best import FORMATS, best_filename, best_predicted, export_best
from engine.io.export import export_target, safe_filename, study_to_csv, write_export
from storage import database_files
from storage.reporting import best_or_none, report_html, results_frame

FORMAT_LABELS = {"json": "JSON", "yaml": "YAML", "csv": "CSV", "header": "C header (#define per factor)",
                 "env": "Shell env file", "t4": "Kernel Tuner T4 results (JSON)"}
MIME = {"json": "application/json", "yaml": "application/yaml", "csv": "text/csv", "header": "text/x-c",
        "env": "text/plain", "t4": "application/json"}

store = get_store()
st.title("Export")
st.caption("Take the tuned configuration back to your build, share a report, or analyse the raw data elsewhere.")
show_flash()
study = study_picker(store)
if study is None:
    st.stop()
spec = study.spec
results = results_frame(store, study)

st.subheader("Best configuration")
source = st.radio("Which best", ["Measured", "Predicted by the latest model"], horizontal=True, key="export_source")
best = None
with guard():
    if source == "Measured":
        best = best_or_none(study, results)
        if best is None:
            st.info("Nothing measured successfully yet.")
    else:
        models = store.models(study.name)
        if models.empty:
            st.info("No model yet: accept a decision on the **Analyze** page first.")
        else:
            latest = models.iloc[-1]
            formula, transform = latest["formula"], latest["transform"]
            lam = latest["box_cox_lambda"]
            model = LinearModel(formula, float(lam) if pd.notna(lam) else ("log" if transform == "log" else "none")).fit(
                analysis_frame(spec, store.measurements(study.name)))
            table = store.study_table(study.name) if spec.runner.get("kind") == "table" else None
            candidates = candidate_set(spec, table)
            point = predicted_minimum(model, candidates).point
            interval = predict(model, pd.DataFrame([point]))
            best = best_predicted(spec, point, float(interval["predicted"].iloc[0]),
                                  float(interval["lower"].iloc[0]), float(interval["upper"].iloc[0]))
            st.caption(f"Model: `{formula}` (transform {transform}); 95% prediction interval shown in the files.")

if best is not None:
    st.json(best.to_dict(), expanded=False)
    fmt = st.selectbox("Format", list(FORMATS), format_func=lambda f: FORMAT_LABELS.get(f, f), key="export_format")
    text = None
    with guard():
        text = export_best(best, fmt)
    if text is not None:
        st.code(text, language={"json": "json", "yaml": "yaml", "header": "c", "env": "bash", "t4": "json"}.get(fmt))
        if st.download_button(f"Download {best_filename(best, fmt)}", text, file_name=best_filename(best, fmt),
                              mime=MIME.get(fmt, "text/plain"), key="download_best"):
            store.log_export(study, f"best-{fmt}", None, len(text.encode()))
        folder = st.text_input("…or save into a folder on the server", key="export_folder",
                               placeholder="e.g. /home/me/project/tuned")
        if folder and st.button("Save", key="export_save"):
            with guard():  # never onto the database, a device or through a symlink; replacing is said
                keep = database_files(db_path())
                _, existed = export_target(folder, best_filename(best, fmt), keep=keep)
                path = write_export(text, folder, best_filename(best, fmt), keep=keep)
                store.log_export(study, f"best-{fmt}", str(path), path.stat().st_size)
                st.success(f"Wrote {path}" + (" (replaced the existing file)" if existed else ""))

st.subheader("Report and raw data")
a, b, c = st.columns(3)
base = safe_filename(study.name)
with guard():
    a.download_button("HTML report", report_html(store, study.name), file_name=f"{base}-report.html",
                      mime="text/html", key="download_report")
    b.download_button("Measurements (CSV)", study_to_csv(spec, results), file_name=f"{base}-measurements.csv",
                      mime="text/csv", key="download_csv")
    parquet = io.BytesIO()
    results.to_parquet(parquet, index=False)
    c.download_button("Measurements (Parquet)", parquet.getvalue(), file_name=f"{base}-measurements.parquet",
                      mime="application/octet-stream", key="download_parquet")
st.caption(f"{len(results):,} rows. The report is one self-contained HTML file: space, designs, ANOVA tables, "
           "decisions log and figures.")

exports = store.exports(study.name)
if not exports.empty:
    with st.expander("Export history"):
        st.dataframe(exports[["created_at", "format", "path", "bytes"]], hide_index=True, width="stretch")
