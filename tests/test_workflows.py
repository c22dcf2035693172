"""The use-case layer: a study session measures, decides and exports; the CLI command and the page for
one action go through the same workflow, so they give the same answer."""

from __future__ import annotations

import json

import pytest

from engine.analysis import analyze, propose_decision
from engine.compare.replay import BenchTable
from engine.compare.summary import summary_records
from engine.errors import UserError
from engine.io.table_import import import_table
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import run_cli
from workflows import StudySession
from workflows.compare import compare, open_comparison, table_study
from workflows.demo import TOY_STUDY, seed_demo_studies

SPACE = Space([Factor("a", "ordinal", (1, 2, 3, 4)), Factor("b", "ordinal", (1, 2, 3))])


def synthetic_spec(name: str = "toy2") -> StudySpec:
    return StudySpec(name, Space([Factor(f"x{i}", "ordinal", (-1, 0, 1)) for i in range(1, 9)]), objective="y",
                     runner={"kind": "synthetic", "name": "toy"})


def test_measure_stores_every_result_once_and_a_second_call_measures_nothing(db_path):
    with Store(db_path) as store:
        study = store.create_study(synthetic_spec())
        design_id = store.save_design(study, study.spec.space.sample(6, seed=1), name="six", kind="random")
        session = StudySession(store, "toy2")
        seen = []
        first = session.measure(executor="inline", repeats=2, echo=lambda config, result: seen.append(result.status))
        again = session.measure(design_id, executor="inline", repeats=2)
        assert first.design_id == design_id and first.progress.results == 12 and seen == ["ok"] * 12
        assert again.progress.results == 0 and again.progress.skipped == 6
        assert len(store.measurements("toy2")) == 12
        with pytest.raises(UserError, match="design 99: not a design of study 'toy2'"):
            session.measure(99, executor="inline")


def test_the_measured_best_of_plain_rows_is_the_best_of_the_measurements_frame(db_path):
    """StudySession.best reads (key, value, status) rows from the store, without pandas: it finds what
    best_measured finds in the frame (a floating factor's level 1 read as the frame holds it, 1.0), and for a table
    study never replayed, in its table."""
    import pandas as pd

    from engine.io.best import best_measured

    space = Space([Factor("t", "ordinal", (8, 16)), Factor("alpha", "ordinal", (1, 2.5)),
                   Factor("opt", "categorical", ("O2", "O3"))])
    rows = [((8, 1, "O2"), 3.0, "ok"), ((16, 1, "O3"), 1.0, "ok"), ((16, 1, "O3"), 1.2, "ok"),
            ((8, 2.5, "O3"), 0.5, "failed"), ((16, 2.5, "O2"), 1.5, "ok"), ((8, 2.5, "O2"), None, "ok")]
    table = pd.DataFrame([{**dict(zip(space.names, config)), "value": value, "status": status}
                          for config, value, status in rows])
    with Store(db_path) as store:
        measured = store.create_study(StudySpec("measured", space, objective="time", runner={"kind": "synthetic"}))
        for config, value, status in rows:
            store.record_measurement(measured, dict(zip(space.names, config)), value, status)
        store.create_study(StudySpec("table", space, objective="time"), table)
        bests = {}
        for name in ("measured", "table"):  # a table holds one row per configuration: its first
            session = StudySession(store, name)
            bests[name], expected = session.best("measured"), best_measured(session.spec, session.results())
            assert {**bests[name].to_dict(), "created_at": ""} == {**expected.to_dict(), "created_at": ""}
            assert bests[name].config == {"t": 16, "alpha": 1.0, "opt": "O3"}
            assert isinstance(bests[name].config["alpha"], float)
    assert bests["measured"].repeats == 2 and bests["measured"].value == pytest.approx(1.1)
    assert bests["measured"].lower < 1.1 < bests["measured"].upper
    assert bests["table"].repeats == 1 and bests["table"].value == 1.0


def _accept_a_decision(store: Store) -> StudySession:
    """The Analyze page's accept, done through the session: fit the screening, settle the proposal."""
    session = StudySession(store, TOY_STUDY)
    formula = "y ~ " + " + ".join(session.spec.space.names)
    result = analyze(session.analysis_data(), formula, candidates=session.candidates())
    decision = propose_decision(result.model, 0.05, candidates=session.candidates(), rule="term")  # fixes on 12 runs
    session.record_decision(decision.settle("tester"), 1, analysis=result)
    return session


def test_the_cli_and_the_session_give_the_same_predicted_best(db_path, tmp_path):
    with Store(db_path) as store:
        seed_demo_studies(store)
        with pytest.raises(UserError, match="no model stored yet"):
            StudySession(store, TOY_STUDY).best("predicted")
        expected = _accept_a_decision(store).best("predicted").to_dict()
    out = tmp_path / "best.json"
    result = run_cli("export", "best", "--study", TOY_STUDY, "--source", "predicted", "--out", str(out), "--json",
                     db=db_path, check=True)
    printed = json.loads(result.stdout)
    assert printed["source"] == "predicted" and printed["configuration"] == expected["configuration"]
    assert printed["value"] == pytest.approx(expected["value"])
    assert printed["interval"]["upper"] == pytest.approx(expected["interval"]["upper"])
    assert json.loads(out.read_text())["source"] == "predicted"
    with Store(db_path) as store:
        assert store.exports(TOY_STUDY)["format"].tolist() == ["best-json"]


def test_bench_and_the_compare_workflow_apply_the_same_preset(db_path, tmp_path):
    frame = SPACE.enumerate()
    frame["time"] = (frame["a"] - 3) ** 2 + frame["b"] + 0.5
    csv = tmp_path / "grid.csv"
    frame.to_csv(csv, index=False)
    imported = import_table(csv, objective="time", name="grid")
    with Store(db_path) as store:
        store.create_study(imported.spec, imported.table)
        table = table_study(store, "grid")
        assert isinstance(table, BenchTable) and table.optimum == pytest.approx(1.5)
        done = compare(table, ["RS", "GA"], reps=3, budget=6, jobs=1, seed=5, store=store, name="page", study="grid")
        record, _ = open_comparison(store, done.stored_id)
        assert record["params"]["preset"] == "paper"
        with pytest.raises(UserError, match="not a table study"):
            store.create_study(synthetic_spec("synthetic"))
            table_study(store, "synthetic")
    result = run_cli("bench", "--table", "grid", "--strategies", "RS,GA", "--reps", "3", "--budget", "6", "--jobs", "1",
                     "--seed", "5", "--json", db=db_path, check=True)
    assert json.loads(result.stdout)["strategies"] == summary_records(done.summary)


def test_a_withdrawn_decision_stays_in_the_log_and_no_longer_applies(db_path):
    with Store(db_path) as store:
        seed_demo_studies(store)
        session = StudySession(store, TOY_STUDY)
        with pytest.raises(UserError, match="no applied decision to withdraw"):
            session.withdraw_last_decision()
        _accept_a_decision(store)
        applied = session.next_step()
        assert applied.fixed and applied.step == 2
        withdrawn = session.withdraw_last_decision()
        assert session.next_step().fixed == {} and session.next_step().step == 1
        log = session.decisions_log()
        assert log.set_index("id").loc[withdrawn, "outcome"].endswith(", withdrawn")
        with pytest.raises(UserError, match="no applied decision"):
            session.withdraw_last_decision()
