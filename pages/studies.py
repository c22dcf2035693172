"""Studies: list, create from a template or spec file, import measured tables, delete."""

import io
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path

import pandas as pd
import streamlit as st

from app.components import flash, guard, show_flash
from app.escape import escape_md
from app.orientation import start_here
from app.state import get_store
from engine.io.paths import REPO_ROOT
from engine.io.spec import TEMPLATES
from workflows.demo import LAPLACIAN_STUDY, MATMUL_STUDY, TOY_STUDY
from workflows.session import create_from_spec, import_measured

store = get_store()
st.title("Studies")
st.caption("A study is a search space, an objective to minimise or maximise, and a way to measure it.")
show_flash()
start_here(expanded=not any(len(store.decisions(name)) for name in store.study_names()))


def _guide() -> tuple[str, str]:
    """(where it is, text) of the README, the full guide, read here so it needs no network: the
    checkout's file, else the copy an installed package carries in its metadata."""
    readme = REPO_ROOT / "README.md"
    if (REPO_ROOT / "pyproject.toml").is_file() and readme.is_file():
        return str(readme), readme.read_text(encoding="utf-8")
    try:
        return "the installed package's description", metadata("tunelab")["Description"] or ""
    except PackageNotFoundError:
        return "", ""


where, guide = _guide()
if guide:
    with st.expander("The guide: README.md (every page, the CLI, study specs)", icon=":material/menu_book:"):
        st.caption(f"From {escape_md(where)}.")
        st.markdown(guide.split("\n", 1)[1] if guide.startswith("# ") else guide)  # markdown: the README, the app's guide


def _csv_columns(upload) -> list[str]:
    """The header of an uploaded CSV (gzip-compressed or not), read from memory: no file needed."""
    compression = "gzip" if upload.name.lower().endswith(".gz") else None
    return list(pd.read_csv(io.BytesIO(upload.getvalue()), nrows=0, compression=compression).columns)


def _report_line(report: dict) -> str:
    return (f"{report['rows']:,} rows, {report['valid_rows']:,} valid, {report['invalid_rows']:,} invalid, "
            f"{report.get('failed_rows', 0):,} failed; optimum {report['optimum']:.7g}")


studies = store.list_studies()
if studies.empty:
    st.info("No studies yet: start from a template below, upload a spec, or import a measured table.")
else:
    shown = studies[["name", "objective", "direction", "runner", "factors", "size", "table_valid", "measured",
                     "measurements", "created_at"]].rename(columns={
        "size": "configurations", "table_valid": "valid (table)", "measured": "measured configs"})
    st.dataframe(shown, hide_index=True, width="stretch", key="study_list")
    demos = [name for name in (TOY_STUDY, MATMUL_STUDY, LAPLACIAN_STUDY) if name in set(studies["name"])]
    if demos:
        st.caption(f"Demo studies, in the list above: {escape_md(', '.join(demos))}. Every page opens the study picked in "
                   "its Study box; the toy problem already holds a measured screening design to analyse.")

new_tab, table_tab, kt_tab, delete_tab = st.tabs(
    ["New study", "Import a table (CSV)", "Import a Kernel Tuner cache", "Delete"]
)

with new_tab:
    source = st.radio("Start from", ["A template", "A spec file (YAML or TOML)"], horizontal=True, key="new_source")
    if source == "A template":
        template = st.selectbox("Template", list(TEMPLATES), key="template")
        text = st.text_area("Spec (YAML)", TEMPLATES[template], height=320, key=f"spec_text_{template}")
        name = st.text_input("Study name", value="", placeholder="leave empty to keep the spec's name", key="new_name")
        if st.button("Create study", type="primary", key="create_from_template"):
            with guard():
                study = create_from_spec(store, text, "yaml", name=name)
                st.session_state["study"] = study.name
                flash(f"Created study '{escape_md(study.name)}' ({study.spec.space.size:,} configurations before "
                      "constraints).")
                st.rerun()
    else:
        upload = st.file_uploader("Spec file", type=["yaml", "yml", "toml"], key="spec_upload")
        if upload is not None and st.button("Create study from file", type="primary", key="create_from_file"):
            with guard():
                fmt = "toml" if upload.name.lower().endswith(".toml") else "yaml"
                study = create_from_spec(store, upload.getvalue().decode("utf-8", errors="replace"), fmt,
                                         filename=upload.name)
                st.session_state["study"] = study.name
                flash(f"Created study '{escape_md(study.name)}' from {escape_md(upload.name)}.")
                st.rerun()

with table_tab:
    st.markdown("Every row is one measured configuration; the objective column holds its measurement. "
                "Columns that never change are dropped; the others become factors.")
    upload = st.file_uploader("CSV file (.csv or .csv.gz)", type=["csv", "gz"], key="table_upload")
    if upload is not None:
        with guard():
            columns = _csv_columns(upload)
            objective = st.selectbox("Objective column", columns, index=len(columns) - 1, key="table_objective")
            direction = st.radio("Better is", ["minimize", "maximize"], horizontal=True, key="table_direction")
            name = st.text_input("Study name", value=Path(upload.name).name.split(".")[0], key="table_name")
            if st.button("Import table", type="primary", key="import_table"):
                imported = import_measured(store, upload, "table", objective=objective, direction=direction,
                                           name=name)
                st.session_state["study"] = imported.spec.name
                flash(f"Imported '{escape_md(imported.spec.name)}': {escape_md(_report_line(imported.report))}.")
                st.rerun()

with kt_tab:
    st.markdown("A Kernel Tuner cache file (`.json` or `.json.gz`). Failed configurations are kept as invalid rows.")
    upload = st.file_uploader("Cache file", type=["json", "gz"], key="kt_upload")
    if upload is not None:
        name = st.text_input("Study name", value=Path(upload.name).name.split(".")[0], key="kt_name")
        if st.button("Import cache", type="primary", key="import_kt"):
            with guard():
                imported = import_measured(store, upload, "kt-cache", name=name)
                st.session_state["study"] = imported.spec.name
                flash(f"Imported '{escape_md(imported.spec.name)}': {escape_md(_report_line(imported.report))}.")
                st.rerun()

with delete_tab:
    if studies.empty:
        st.write("Nothing to delete.")
    else:
        target = st.selectbox("Study to delete", studies["name"].tolist(), key="delete_target")
        row = studies.set_index("name").loc[target]
        confirm = st.checkbox(
            f"Yes, delete '{escape_md(target)}' with its {int(row['measurements']):,} measurements and "
            f"{int(row['table_rows']):,} table rows", key="delete_confirm")
        if st.button("Delete study", disabled=not confirm, key="delete_study"):
            with guard():
                store.delete_study(target)
                flash(f"Deleted study '{escape_md(target)}'.")
                st.rerun()
