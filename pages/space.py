"""Space: edit a study's factors and constraints, with live validation and the valid-space size."""

from dataclasses import replace

import streamlit as st

from app.components import flash, guard, show_flash, study_picker
from app.escape import escape_md
from app.state import get_store
from engine.space.factors import KINDS
from engine.space.text import factor_table, space_from_table, valid_count
from engine.study import check_reserved

store = get_store()
st.title("Space")
st.caption("Factors are the knobs; constraints (one per line, e.g. `lws_y <= threads_number`) say which "
           "combinations are valid. Levels: `1, 2, 4`, a range `1..30`, `0..100 step 10`, or `2^0..2^10`.")
show_flash()
study = study_picker(store)
if study is None:
    st.stop()

space = study.spec.space
edited = st.data_editor(
    factor_table(space),
    num_rows="dynamic",
    hide_index=True,
    width="stretch",
    key=f"factors_{study.id}",
    column_config={
        "name": st.column_config.TextColumn("name", required=True),
        "kind": st.column_config.SelectboxColumn("kind", options=list(KINDS), required=True),
        "levels": st.column_config.TextColumn("levels", width="large"),
    },
)
constraints = st.text_area("Constraints", "\n".join(space.constraints), height=120, key=f"constraints_{study.id}")

draft = None
with guard():
    parsed = space_from_table(edited.to_dict(orient="records"), constraints)
    check_reserved(parsed.names, "space")  # a factor named like a measurement column could never be stored
    draft = parsed
    cols = st.columns(3)
    cols[0].metric("Factors", len(draft.factors))
    if study.spec.runner.get("kind") == "table":  # a table study measures only its rows: count those, not levels
        counts = store.list_studies().set_index("name").loc[study.name]
        cols[1].metric("Rows in the table", f"{int(counts['table_rows']):,}")
        cols[2].metric("Valid rows", f"{int(counts['table_valid']):,}",
                       help="Rows of the imported table holding a successful measurement: the configurations "
                            "this study can replay (its Design candidates).")
    else:
        cols[1].metric("Configurations (factorial)", f"{draft.size:,}")
        count, exact = valid_count(draft)
        cols[2].metric("Valid" if exact else "Valid (estimated)", f"{count:,}",
                       help=None if exact else "Estimated by sampling: the space is too large to count one by one.")

if draft is not None and draft != space:
    left, right = st.columns(2)
    if left.button("Save changes", type="primary", key="save_space"):
        with guard():
            store.update_study_spec(study.name, replace(study.spec, space=draft))
            flash("Saved the space.")
            st.rerun()
    new_name = right.text_input("…or save as a new study named", key="space_new_name")
    if right.button("Save as new study", key="save_space_as", disabled=not new_name.strip()):
        with guard():
            store.create_study(replace(study.spec, name=new_name.strip(), space=draft))
            st.session_state["study"] = new_name.strip()
            flash(f"Created study '{escape_md(new_name.strip())}'.")
            st.rerun()
