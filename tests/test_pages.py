"""Pages through Streamlit's AppTest: real scripts, a real DuckDB file, no browser."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from engine.compare.presets import PAPER_DLMT
from engine.io.paths import REPO_ROOT
from storage import Store
from tests.conftest import rerun_until


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


def _measured_toy(db_path, n=30):
    """The seeded toy study with ``n`` random configurations measured by its synthetic objective."""
    from engine.runners.synthetic import evaluate
    from engine.space.configs import config_keys
    from workflows.demo import TOY_STUDY, seed_demo_studies

    with Store(db_path) as store:
        seed_demo_studies(store)
        study = store.get_study(TOY_STUDY)
        design = study.spec.space.sample(n, seed=1)
        design_id = store.save_design(study, design, name="random", kind="random")
        values = evaluate(study.spec.runner, design, config_keys(study.spec.space, design))
        for (_, row), value in zip(design.iterrows(), values):
            store.record_measurement(study, row.to_dict(), float(value), design_id=design_id)
    return TOY_STUDY


def test_analyze_page_fits_explains_and_logs_an_accepted_decision(app_db):
    name = _measured_toy(app_db)
    at = page("analyze.py").run()
    assert not at.exception and not at.error
    summary, anova = at.dataframe[0].value, at.dataframe[1].value  # the effect summary, then the ANOVA table
    assert list(summary["LogWorth"]) == sorted(summary["LogWorth"], reverse=True)
    terms = anova["term"].tolist()
    assert terms[:3] == ["x1", "x2", "x3"] and terms[-1] == "Residuals"
    # untick x2's linear term: the ANOVA table loses its row and the formula follows
    [c for c in at.checkbox if c.label == "linear x2"][0].uncheck().run()
    assert "x2" not in at.dataframe[1].value["term"].tolist()
    assert "x2" not in [t for t in at.text_input if t.label == "Formula"][0].value
    explanation = " ".join(m.value for m in at.markdown)
    assert "x5: F =" in explanation and "fix at -1.0" in explanation  # the strongest effect, fixed at its best
    # untick x5's checkbox: the decision is recorded as an edit
    [c for c in at.checkbox if c.label == "fix x5"][0].uncheck().run()
    at.button(key="accept_decision").click().run()
    assert not at.exception
    with Store(app_db) as store:
        log = store.decisions(name)
    assert log["outcome"].tolist() == ["edited"]
    assert '"x5"' not in log["chosen"].iloc[0] and '"x1"' in log["chosen"].iloc[0]
    assert '"anova"' in log["evidence"].iloc[0]


def test_analyze_page_reports_bad_formulas_in_one_line(app_db):
    _measured_toy(app_db, n=6)
    at = page("analyze.py").run()
    formula = [t for t in at.text_input if t.label == "Formula"][0]
    formula.input("y ~ x1 + nosuch").run()
    assert not at.exception
    assert any("unknown name 'nosuch'" in e.value for e in at.error)
    too_many = " + ".join([f"x{i}" for i in range(1, 9)] + [f"I(x{i}^{p})" for i in range(1, 9) for p in (2, 3)])
    formula.input(f"y ~ {too_many}").run()  # 25 coefficients, 18 measurements
    assert any("coefficients" in e.value or "rows" in e.value for e in at.error)


def test_run_page_measures_a_pending_design_in_the_background(app_db):
    from workflows.demo import TOY_STUDY, seed_demo_studies

    with Store(app_db) as store:
        seed_demo_studies(store)
        study = store.get_study(TOY_STUDY)
        store.save_design(study, study.spec.space.sample(10, seed=2), name="random", kind="random")
    at = page("run.py").run()
    assert not at.exception
    at.radio(key="run_executor").set_value("inline").run()
    at.button(key="run_start").click().run()
    rerun_until(at, lambda at: at.success, tries=60)
    assert at.success and "10 results stored" in at.success[0].value
    with Store(app_db) as store:
        designs = store.designs(TOY_STUDY)
        assert len(store.measurements(TOY_STUDY, design_id=int(designs["id"].max()))) == 10
        assert designs["pending"].tolist() == [0, 0]  # the seeded screening and this one



def test_run_page_tunes_with_a_strategy_and_a_refused_option_is_one_line(app_db):
    """The dashboard's tuning: a strategy, a budget and an executor, in the background; every measurement is stored
    under the strategy's name, and the best shown. An option value the strategy refuses is one error line, no job.
    (In process: under AppTest the page is ``__main__``, which a process pool's children would run again.)"""
    from workflows.demo import TOY_STUDY, seed_demo_studies

    with Store(app_db) as store:
        seed_demo_studies(store)
        before = len(store.measurements(TOY_STUDY))
    at = page("run.py").run()
    at.radio(key="run_mode").set_value("tune").run()
    assert not at.exception and not at.error
    at.selectbox(key="run_strategy").set_value("RS").run()
    at.number_input(key="run_budget").set_value(8).run()
    at.radio(key="run_executor").set_value("inline").run()
    at.button(key="run_start").click().run()
    rerun_until(at, lambda at: at.info, tries=90)
    assert not at.exception and not at.error
    assert at.success and "Done" in at.success[0].value
    assert any("Best" in i.value and "of 8 configurations used" in i.value for i in at.info)
    with Store(app_db) as store:
        stored = store.measurements(TOY_STUDY)
    assert len(stored) - before == 8 and stored["strategy"].iloc[before:].eq("RS").all()

    at.selectbox(key="run_strategy").set_value("DLMT").run()
    at.text_input(key="run_opt_DLMT_formula").input("y ~ x1 + nowhere").run()
    at.button(key="run_start").click().run()
    rerun_until(at, lambda at: at.error, tries=30)
    assert not at.exception and len(at.error) == 1 and "nowhere" in at.error[0].value
    with Store(app_db) as store:
        assert len(store.measurements(TOY_STUDY)) == before + 8


def test_export_page_offers_every_best_format_and_the_report(app_db):
    name = _measured_toy(app_db, n=12)
    at = page("export.py").run()
    assert not at.exception and not at.error
    shown = {}
    for fmt in ("json", "yaml", "csv", "header", "env", "t4"):
        at.selectbox(key="export_format").set_value(fmt).run()
        assert not at.exception and not at.error
        shown[fmt] = at.code[0].value
    assert "#define x1" in shown["header"] and "\nx1=" in shown["env"]
    assert json.loads(shown["json"])["source"] == "measured" and json.loads(shown["t4"])
    at.radio(key="export_source").set_value("Predicted by the latest model").run()
    assert not at.exception
    assert any("No model yet" in i.value for i in at.info)
    with Store(app_db) as store:
        assert len(store.measurements(name)) == 12 + 12  # the seeded screening, then 12 random
        store.save_model(store.get_study(name), formula="y ~ x1 + x5", transform="none", coefficients=[], anova=[])
    at.run()
    assert not at.exception and not at.error
    at.selectbox(key="export_format").set_value("json").run()
    exported = json.loads(at.code[0].value)
    assert exported["source"] == "predicted" and exported["configuration"]["x5"] == -1.0  # x5's effect is +3.1


def test_design_page_builds_and_saves_a_d_optimal_design(app_db):
    at = page("design.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="design_kind").value == "dopt"
    at.button(key="design_build").click().run()
    assert not at.exception and not at.error
    criteria = {m.label: float(m.value) for m in at.metric}
    assert set(criteria) >= {"D", "A", "Ge", "Dea"} and 0 < criteria["Ge"] <= 1
    table = at.dataframe[0].value
    assert table["already_measured"].sum() == 12  # the seeded screening runs are forced in, not charged again
    new = int((~table["already_measured"]).sum())
    at.button(key="design_save").click().run()
    assert at.success and f"{new} configurations to measure" in at.success[0].value
    with Store(app_db) as store:
        designs = store.designs(at.session_state["study"])
    assert designs["kind"].tolist() == ["pb", "dopt"] and designs["pending"].tolist() == [0, new]


def test_design_page_warns_when_runs_are_fewer_than_coefficients(app_db):
    at = page("design.py").run()
    at.radio(key="design_rule").set_value("custom").run()
    runs = [n for n in at.number_input if n.label == "Runs"][0]
    runs.set_value(3).run()
    assert any("cannot estimate" in w.value for w in at.warning)
    at.button(key="design_build").click().run()
    assert not at.exception and at.error  # one line from the engine, nothing saved
    with Store(app_db) as store:
        assert store.designs(at.session_state["study"])["kind"].tolist() == ["pb"]  # only the seeded one


def test_compare_page_runs_a_small_comparison_in_the_background(app_db, data):
    at = page("compare.py").run()
    assert not at.exception and not at.error
    assert not [w for w in at.number_input if w.key.startswith("cmp_opt")]  # one strategy's at a time: RS has none
    at.selectbox(key="cmp_opt_shown").set_value("DLMT").run()
    at.number_input(key="cmp_opt_DLMT_steps").set_value(2).run()  # from DLMT's options table, over the paper preset
    at.selectbox(key="cmp_opt_shown").set_value("GA").run()  # another strategy's options: DLMT's edit is kept
    assert not [w for w in at.number_input if w.key.startswith("cmp_opt_DLMT")]
    at.multiselect(key="cmp_strategies").set_value(["RS", "DLMT"])
    at.number_input(key="cmp_reps").set_value(3)
    at.number_input(key="cmp_budget").set_value(60)
    at.number_input(key="cmp_jobs").set_value(1)
    at.button[0].click().run()
    rerun_until(at, lambda at: at.success or at.error)
    assert not at.error and at.success and "Comparison saved" in at.success[0].value
    table = at.dataframe[0].value
    assert table["strategy"].tolist() == ["RS", "DLMT"] and (table["runs"] == 3).all()
    assert (table["min"] >= 1.0).all() and (table["budget_max"] <= 60).all()
    with Store(app_db) as store:
        from workflows.compare import saved_comparisons

        params = saved_comparisons(store, at.selectbox(key="cmp_study").value)["params"].iloc[0]
    assert params["preset"] == "paper" and params["options"]["DLMT"] == {**PAPER_DLMT, "steps": 2}


def test_an_accepted_decision_carries_into_the_next_design_step(app_db):
    name = _measured_toy(app_db, n=30)
    analyze = page("analyze.py").run()
    analyze.button(key="accept_decision").click().run()
    with Store(app_db) as store:
        chosen = json.loads(store.decisions(name)["chosen"].iloc[0])
    assert chosen["fix"], "the screening should fix at least one factor"
    design = page("design.py").run()
    assert not design.exception and not design.error
    assert any(c.label.startswith("Step 2: continue from the decisions log") and c.value for c in design.checkbox)
    design.button(key="design_build").click().run()
    assert not design.exception and not design.error
    built = design.dataframe[0].value
    for factor, level in chosen["fix"].items():
        assert (built[factor] == level).all(), factor  # every run keeps the fixed levels
    design.button(key="design_save").click().run()
    with Store(app_db) as store:
        assert store.designs(name)["step"].tolist()[-1] == 2


def test_analyze_page_answers_a_paused_tuning_run(app_db, tmp_path):
    from tests.conftest import run_cli
    from tests.strategies_support import write_csv

    csv = tmp_path / "small.csv"
    write_csv(csv)
    run_cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=app_db, check=True)
    tune = ("tune", "--study", "small", "--budget", "30", "--json")
    assert json.loads(run_cli(*tune, db=app_db, check=True).stdout)["waiting_for_decision"]
    at = page("analyze.py").run()
    assert not at.exception
    assert any("tuning run waits for your decision (step 1)" in h.value for h in at.subheader)
    at.sidebar.text_input(key="actor_input").input("ana").run()
    [b for b in at.button if b.label == "Accept"][0].click().run()
    assert not at.exception and "Step 1 accepted" in at.success[0].value
    assert not any("waits for your decision" in h.value for h in at.subheader)
    with Store(app_db) as store:
        log = store.decisions("small")
    assert log["outcome"].tolist() == ["proposed", "accepted"] and log["actor"].iloc[1] == "ana"
    _release_page_store()  # DuckDB: one process owns the file, and the CLI is another one
    resumed = json.loads(run_cli(*tune, db=app_db, check=True).stdout)
    assert resumed["decisions"] >= 1 and resumed["budget_used"] > 0
    assert resumed["finished"] or resumed["pending"]["step"] == 2  # past the answered step


def _release_page_store() -> None:
    """Close the store the pages cached (the same object ``app.state`` hands them) and forget it."""
    import streamlit as st

    from app.state import _open, db_path

    _open(db_path()).close()
    st.cache_resource.clear()


def test_analyze_page_warns_of_aliased_terms_and_refuses_type_iii_in_one_line(app_db):
    """Issue 12 (classes 3, 4 and the fit's warnings): the aliased term is named in a warning, Type II
    gives it 0 df, and Type III is refused in one error line, with no traceback."""
    _measured_toy(app_db, n=6)
    at = page("analyze.py").run()
    formula = [t for t in at.text_input if t.label == "Formula"][0]
    formula.input("y ~ x1 + x2 + I(x1 + x2)").run()
    assert not at.exception and not at.error
    assert any("aliased (not estimable): I(x1 + x2)" in w.value for w in at.warning)
    at.radio(key="analyze_anova_type").set_value(2).run()
    assert not at.exception and not at.error
    at.radio(key="analyze_anova_type").set_value(3).run()
    assert not at.exception
    assert [e.value for e in at.error if "Type III" in e.value] == [
        "Type III ANOVA: the model has aliased coefficients (I(x1 + x2)), so its tests would depend on which "
        "column lm dropped (car refuses too); use Type II, or drop those terms"]


def test_surrogates_page_shows_a_block_and_an_evaluation(app_db):
    from engine.io.paths import data_dir

    if data_dir() is None or not (data_dir() / "llvm_mca_anchor").is_dir():
        pytest.skip("the data folder is absent")
    at = page("surrogates.py").run(timeout=180)
    assert not at.exception and not at.error
    assert not at.metric  # no block simulated on opening
    assert at.button(key="dt_decode").label == "Decode the blocks to browse them"  # nothing computed until asked
    at.text_input(key="dt_search").input("ADD64rr").run(timeout=120)
    assert not at.exception and not at.error and not at.metric  # found, none simulated until one is picked
    blocks = at.selectbox(key="dt_block")
    blocks.set_value(blocks.options[0]).run(timeout=120)
    assert not at.exception and not at.error
    assert "ADD64rr" in set(at.dataframe[0].value["opcode"])  # the block found has that opcode
    shown = {m.label for m in at.metric}
    assert {"llvm-mca-19", "tunelab simulator"} <= shown
    assert any("No evaluation stored yet" in i.value for i in at.info)
    at.selectbox(key="dt_eval_arch").set_value("haswell")
    at.number_input(key="dt_limit").set_value(40)
    at.button[0].click().run(timeout=180)  # the form's Evaluate
    assert not at.exception and not at.error
    accuracy = at.dataframe[-1].value.set_index("predictor")
    assert set(accuracy.index) == {"tunelab (default table)", "simple table"} and (accuracy["n"] == 40).all()
