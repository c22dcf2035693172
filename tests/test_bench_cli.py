"""``tunelab bench`` and ``tunelab tune`` as a person runs them (real processes, real DuckDB files)."""

from __future__ import annotations

import json

from tests.conftest import run_cli
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
    text = run_cli("bench", "--table", str(csv), "--objective", "time", "--strategies", "RS", "--reps", "2",
                   "--budget", "5", "--jobs", "1", check=True).stdout
    assert "budget_mean" in text and "2 repetitions" in text


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
        result = run_cli(*args, db=tmp_path / "e.duckdb")
        assert result.returncode == 2, result.stderr
        assert expected in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_tune_runs_dlmt_on_a_table_study_and_stores_everything(tmp_path):
    csv, db = tmp_path / "small.csv", tmp_path / "t.duckdb"
    write_csv(csv)
    run_cli("import", "table", str(csv), "--objective", "time", "--name", "small", db=db, check=True)
    refused = run_cli("tune", "--study", "small", "--strategy", "DLMT", "--budget", "30", db=db)
    assert refused.returncode == 2 and "--auto" in refused.stderr
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
    text = run_cli("tune", "--study", "small", "--strategy", "RS", "--budget", "5", db=db, check=True).stdout
    assert text.startswith("best time = ") and "budget used 5 of 5" in text
