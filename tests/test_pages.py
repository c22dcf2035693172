"""Pages through Streamlit's AppTest: real scripts, a real DuckDB file, no browser."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engine.paths import REPO_ROOT
from storage import Store


@pytest.fixture
def app_db(db_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_DB", str(db_path))
    return db_path


def page(name: str) -> AppTest:
    return AppTest.from_file(str(REPO_ROOT / "pages" / name), default_timeout=60)


def test_studies_page_lists_seeded_demo_studies(app_db):
    at = page("studies.py").run()
    assert not at.exception
    listing = at.dataframe[0].value
    assert "Paper toy problem" in listing["name"].tolist()


def test_create_a_study_from_a_template(app_db):
    at = page("studies.py").run()
    at.text_input(key="new_name").input("My toy").run()
    at.button(key="create_from_template").click().run()
    assert not at.exception and not at.error
    with Store(app_db) as store:
        assert "My toy" in store.study_names()
    assert "My toy" in at.dataframe[0].value["name"].tolist()


def test_a_broken_template_edit_is_one_error_line_and_nothing_is_lost(app_db):
    at = page("studies.py").run()
    before = at.dataframe[0].value["name"].tolist()
    area = at.text_area[0]
    area.input(area.value.replace("constraints: []", "constraints: [\"__import__('os')\"]")
               .replace("name: ", "name: Hostile ", 1)).run()
    at.button(key="create_from_template").click().run()
    assert not at.exception
    assert at.error and "not allowed" in at.error[0].value
    with Store(app_db) as store:
        assert store.study_names() == before


def test_delete_needs_confirmation(app_db):
    at = page("studies.py").run()
    name = at.selectbox(key="delete_target").value
    assert at.button(key="delete_study").disabled
    at.checkbox(key="delete_confirm").check().run()
    at.button(key="delete_study").click().run()
    with Store(app_db) as store:
        assert name not in store.study_names()


def test_space_page_validates_constraints_live(app_db):
    at = page("space.py").run()
    assert not at.exception
    assert any(m.label == "Configurations (factorial)" for m in at.metric)
    study_id = at.session_state["study"]
    area = [a for a in at.text_area if a.label == "Constraints"][0]
    area.input("x1 <= x2\nx9 > 0").run()
    assert at.error and "unknown name 'x9'" in at.error[0].value
    area.input("x1 > 5").run()
    assert at.error and "excludes every configuration" in at.error[0].value
    area.input("x1 <= x2").run()
    assert not at.error
    valid = [m for m in at.metric if m.label.startswith("Valid")][0]
    assert int(valid.value.replace(",", "")) < int(
        [m for m in at.metric if m.label == "Configurations (factorial)"][0].value.replace(",", ""))
    assert study_id == at.session_state["study"]
