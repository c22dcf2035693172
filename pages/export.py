"""Export: the best configuration as a file a build can read, a study report, and the raw data."""

import io

import streamlit as st

from app.components import guard, show_flash, study_notes_editor, study_picker
from app.escape import code_md, escape_md
from app.state import get_store
from engine.io.best import FORMATS, best_filename, export_best
from engine.io.files import safe_filename
from workflows import StudySession

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
session = StudySession(store, study.name)
results = session.results()

st.subheader("Best configuration")
source = st.radio("Which best", ["Measured", "Predicted by the latest model"], horizontal=True, key="export_source")
best = None
model = session.latest_model()
if source == "Measured":
    best = session.measured_best_or_none()
    if best is None:
        st.info("Nothing measured successfully yet.")
elif model is None:
    st.info("No model yet: accept a decision on the **Analyze** page first.")
else:
    with guard():
        best = session.best("predicted")
    if best is not None:
        for warning in filter(None, [session.implausible_best(best), *best.warnings]):
            st.warning(escape_md(warning))
        st.caption(f"Model: {code_md(model['formula'])} (transform {escape_md(model['transform'])}); "
                   f"{escape_md(best.search)}. A prediction, never measured: every file says so, with its 95% "
                   "prediction interval.")
        if best.worse_than_measured:
            st.button("Export the measured best instead", key="export_use_measured",
                      on_click=lambda: st.session_state.update(export_source="Measured"))

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
            session.log_download(f"best-{fmt}", len(text.encode()))
        folder = st.text_input("…or save into a folder on the server", key="export_folder",
                               placeholder="e.g. /home/me/project/tuned")
        if folder and st.button("Save", key="export_save"):
            with guard():  # never onto the database, a device or through a symlink; replacing is said
                written = session.write_best(best, fmt, folder)
                st.success(f"Wrote {escape_md(written.path)}" + (" (replaced the existing file)" if written.replaced else ""))

st.subheader("Report and raw data")
study_notes_editor(session, key="export")
a, b, c = st.columns(3)
base = safe_filename(study.name)
with guard():
    a.download_button("HTML report", session.report_html(), file_name=f"{base}-report.html",
                      mime="text/html", key="download_report")
    b.download_button("Measurements (CSV)", session.study_text("csv"), file_name=f"{base}-measurements.csv",
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
