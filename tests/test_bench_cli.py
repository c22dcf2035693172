"""``tunelab bench`` and ``tunelab tune`` as a person runs them (real processes, real DuckDB files)."""

from __future__ import annotations

import json

from tests.conftest import cli, run_cli
from tests.strategies_support import write_csv


def test_bench_prints_json_per_strategy_and_stores_the_comparison(tmp_path):
    csv, db = tmp_path / "small.csv", tmp_path / "b.duckdb"
    write_csv(csv)
    result = run_cli("bench", "--table", str(csv), "--objective", "time", "--strategies", "RS,LHS,DLMT", "--reps", "4",
                     "--budget", "15", "--jobs", "1", "--json", db=db, check=True)
    data = json.loads(result.stdout)
    assert set(data["strategies"]) == {"RS", "LHS", "DLMT"}
    for row in data["strategies"].values():
        assert {"mean", "min", "max", "median", "budget_mean", "budget_max"} <= set(row)
        assert 1.0 <= row["min"] <= row["median"] <= row["max"] and row["budget_max"] <= 15
    assert data["comparison_id"] == 1
    from storage import Store
    from storage.comparisons import list_comparisons

    with Store(db) as store:
        assert list_comparisons(store).loc[0, "runs"] == 12
    text = cli("bench", "--table", str(csv), "--objective", "time", "--strategies", "RS", "--reps", "2",
               "--budget", "5", "--jobs", "1", check=True).stdout
    assert "budget_mean" in text and "2 repetitions" in text  # no --db: a table file's comparison is not stored
    cli("bench", "--table", str(csv), "--objective", "time", "--strategies", "RS", "--reps", "2", "--budget", "5",
        "--jobs", "1", db=db, check=True)  # --db given to main itself (not in sys.argv): stored
    with Store(db) as store:
        assert list(list_comparisons(store)["runs"].sort_values()) == [2, 12]


def test_bench_and_tune_refuse_bad_input_in_one_line(tmp_path):
    csv = tmp_path / "small.csv"
    write_csv(csv)
    for args, expected in [
        (("bench", "--table", str(csv), "--objective", "time", "--strategies", "RS,XX"), "strategy 'XX'"),
        (("bench", "--table", str(csv)), "--objective"),
        (("bench", "--table", str(csv), "--objective", "time", "--reps", "0"), "--reps 0"),
        (("bench", "--table", str(csv), "--objective", "time", "--options", "{bad"), "--options"),
        (("tune", "--study", "nope", "--budget", "5", "--auto"), "study 'nope' not found"),
    ]:
        result = cli(*args, db=tmp_path / "e.duckdb")
        assert result.returncode == 2, result.stderr
        assert expected in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_tune_runs_dlmt_on_a_table_study_and_stores_everything(tmp_path):
    csv, db = tmp_path / "small.csv", tmp_path / "t.duckdb"
    write_csv(csv)
    run_cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=db, check=True)
    result = run_cli("tune", "--study", "small", "--strategy", "DLMT", "--budget", "30", "--auto", "--json", db=db,
                     check=True)
    data = json.loads(result.stdout)
    assert data["budget_used"] <= 30 and data["best_value"] >= 2.0 and data["decisions"] >= 1
    from storage import Store

    with Store(db) as store:
        measured = store.measurements("small")
        decisions = store.decisions("small")
    assert len(measured) == data["measurements"] and set(measured["strategy"]) == {"DLMT"}
    assert measured["step"].notna().all() and measured["value"].min() == data["best_value"]
    assert len(decisions) == data["decisions"] and set(decisions["outcome"]) == {"auto"}
    text = cli("tune", "--study", "small", "--strategy", "RS", "--budget", "5", db=db, check=True).stdout
    assert text.startswith("best time = ") and "budget used 5 of 5" in text


def _tune(db, *extra):
    args = ("tune", "--study", "small", "--strategy", "DLMT", "--budget", "30", "--seed", "4", "--json", *extra)
    return json.loads(cli(*args, db=db, check=True).stdout)


def test_tune_without_auto_pauses_for_a_person_and_resumes_where_it_stopped(tmp_path):
    from storage import Store

    csv = tmp_path / "small.csv"
    write_csv(csv)
    dbs = {kind: tmp_path / f"{kind}.duckdb" for kind in ("auto", "person")}
    for db in dbs.values():
        cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=db, check=True)
    auto = _tune(dbs["auto"], "--auto")
    db = dbs["person"]
    nothing = cli("decide", "--study", "small", "accept", db=db)
    assert nothing.returncode == 2 and "no tuning run waits" in nothing.stderr
    first = _tune(db)
    assert first["waiting_for_decision"] and first["pending"]["step"] == 1 and not first["finished"]
    again = _tune(db)  # nobody answered: it stops at the same place without measuring anything
    assert again["measurements"] == 0 and again["pending"] == first["pending"]
    bad = cli("decide", "--study", "small", "edit", "--fix", "a=3", db=db)
    assert bad.returncode == 2 and "'3' is not a level of 'a'" in bad.stderr and len(bad.stderr.splitlines()) == 1
    rounds = 0
    result = first
    while result["waiting_for_decision"]:
        cli("decide", "--study", "small", "accept", "--by", "ana", db=db, check=True)
        result = _tune(db)
        rounds += 1
    # a person who accepts every proposal retraces the automatic run exactly, one step per call
    assert rounds == auto["decisions"] and result["finished"]
    assert result["best_config"] == auto["best_config"] and result["budget_used"] == auto["budget_used"]
    with Store(db) as store:
        measured, log = store.measurements("small"), store.decisions("small")
    assert len(measured) == auto["measurements"] and not measured.duplicated(["a", "b", "c", "d", "repeat"]).any()
    assert list(log["outcome"]) == ["proposed", "accepted"] * rounds and set(log.loc[1::2, "actor"]) == {"ana"}


def test_an_edited_decision_steers_the_resumed_run(tmp_path):
    from storage import Store

    csv, db = tmp_path / "small.csv", tmp_path / "e.duckdb"
    write_csv(csv)
    cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=db, check=True)
    _tune(db)
    run_cli("decide", "--study", "small", "edit", "--fix", "c=true", "--note", "hold c", db=db, check=True)
    result = _tune(db)
    with Store(db) as store:
        measured, log = store.measurements("small"), store.decisions("small")
    later = measured[measured["step"] > 1]
    assert len(later) and later["c"].astype(bool).all()  # every later step stays inside the person's choice
    edited = log[log["outcome"] == "edited"].iloc[0]
    assert json.loads(edited["chosen"])["fix"] == {"c": True} and result["budget_used"] <= 30


def test_auto_takes_over_a_paused_run_and_answers_its_open_proposal(tmp_path):
    csv, db = tmp_path / "small.csv", tmp_path / "a.duckdb"
    write_csv(csv)
    cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=db, check=True)
    assert _tune(db)["waiting_for_decision"]
    assert _tune(db, "--auto")["finished"]
    nothing = cli("decide", "--study", "small", "accept", db=db)
    assert nothing.returncode == 2 and "no tuning run waits" in nothing.stderr
