"""The ``tunelab`` console script in real processes on real DuckDB files."""

from __future__ import annotations

import gzip
import json

import pytest

from engine.io.export import parse_study_json
from tests.conftest import cli, one_line_error, run_cli

SPEC = """
name: cli toy
objective: y
runner: {kind: synthetic, name: toy}
factors:
  - {name: a, kind: integer, low: 1, high: 8}
  - {name: b, kind: ordinal, powers_of_two: [1, 64]}
  - {name: fast, kind: boolean}
constraints: ["a <= b"]
"""


def test_import_laplacian_table_reports_the_paper_figures(db_path, data):
    result = run_cli("import", "table", str(data / "laplacian" / "search_space.csv"),
                     "--objective", "time_per_pixel", "--json", db=db_path, check=True)
    report = json.loads(result.stdout)
    assert report["valid_rows"] == 23_120 and report["rows"] == 23_120
    assert report["optimum"] == pytest.approx(1.165013e-10, rel=1e-6)
    listed = json.loads(run_cli("study", "list", "--json", db=db_path, check=True).stdout)
    assert listed[0]["name"] == "search_space" and listed[0]["table_valid"] == 23_120


def test_a_table_whose_every_row_failed_imports_and_says_so(db_path, tmp_path):
    table = tmp_path / "failed.csv"
    table.write_text("x,t,status\n1,,failed\n2,,failed\n")
    result = cli("import", "table", str(table), "--objective", "t", db=db_path)
    assert result.returncode == 0, result.stderr
    assert "2 failed; no successful row, so no optimum yet" in result.stdout


def test_import_kernel_tuner_cache(db_path, data):
    result = run_cli("import", "kt-cache", str(data / "kernel_tuner" / "convolution_milo_A4000.json.gz"),
                     "--json", db=db_path, check=True)
    report = json.loads(result.stdout)
    assert (report["rows"], report["valid_rows"]) == (4_362, 4_201)
    assert report["optimum"] == pytest.approx(1.021172, rel=1e-6)


def test_study_create_show_export_delete(db_path, tmp_path):
    spec = tmp_path / "toy.yaml"
    spec.write_text(SPEC)
    created = json.loads(run_cli("study", "create", "--spec", str(spec), "--json", db=db_path, check=True).stdout)
    assert created["created"] == "cli toy" and created["size"] == 8 * 7 * 2
    shown = json.loads(run_cli("study", "show", "cli toy", "--json", db=db_path, check=True).stdout)
    assert [f["name"] for f in shown["factors"]] == ["a", "b", "fast"] and shown["constraints"] == ["a <= b"]
    text = cli("study", "show", "cli toy", db=db_path, check=True).stdout
    assert "constraint: a <= b" in text
    out = tmp_path / "exports" / "toy.json"
    run_cli("export", "study", "cli toy", "--format", "json", "--out", str(out), db=db_path, check=True)
    document = parse_study_json(out.read_text())
    assert document.spec.name == "cli toy"
    one_line_error(cli("study", "create", "--spec", str(spec), db=db_path), "already exists")
    run_cli("study", "delete", "cli toy", "--yes", db=db_path, check=True)
    assert json.loads(cli("study", "list", "--json", db=db_path, check=True).stdout) == []


def test_bad_input_is_one_line_and_nothing_is_lost(db_path, tmp_path, data):
    spec = tmp_path / "toy.yaml"
    spec.write_text(SPEC)
    cli("study", "create", "--spec", str(spec), db=db_path, check=True)

    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(SPEC.replace('["a <= b"]', "[\"__import__('os').system('true')\"]").replace("cli toy", "h"))
    one_line_error(cli("study", "create", "--spec", str(hostile), db=db_path), "__import__", "not allowed")

    csv = tmp_path / "bad.csv"
    csv.write_text("a,b,t\n1,2,0.5\n2,3,fast\n")
    one_line_error(cli("import", "table", str(csv), "--objective", "t", db=db_path), "fast")
    one_line_error(cli("import", "table", str(csv), "--objective", "time", db=db_path), "time")

    truncated = tmp_path / "cache.json.gz"
    full = gzip.decompress((data / "kernel_tuner" / "convolution_milo_A4000.json.gz").read_bytes())
    truncated.write_bytes(gzip.compress(full[: len(full) // 3]))
    one_line_error(cli("import", "kt-cache", str(truncated), db=db_path))
    notjson = tmp_path / "notjson.json"
    notjson.write_text("hello")
    one_line_error(cli("import", "kt-cache", str(notjson), db=db_path))

    one_line_error(cli("study", "show", "nope", db=db_path), "not found")
    one_line_error(cli("study", "list", db=tmp_path / "missing" / "x.duckdb"), "does not exist")
    # everything stored before is still there
    listed = json.loads(cli("study", "list", "--json", db=db_path, check=True).stdout)
    assert [s["name"] for s in listed] == ["cli toy"]


def test_locked_database_gives_one_sentence(db_path):
    from storage import Store

    with Store(db_path):
        one_line_error(run_cli("study", "list", db=db_path), "in use by another process")


def test_design_for_a_stored_study_is_saved_as_pending_measurements(db_path, tmp_path):
    spec = tmp_path / "toy.yaml"
    spec.write_text(SPEC)
    cli("study", "create", "--spec", str(spec), db=db_path, check=True)
    result = json.loads(run_cli("design", "dopt", "--study", "cli toy", "--formula", "~ a + b + I(a^2) + fast",
                                "--trials", "10", "--seed", "1", "--json", db=db_path, check=True).stdout)
    assert result["runs"] == 10 and result["criteria"]["D"] > 0
    shown = json.loads(cli("study", "show", "cli toy", "--json", db=db_path, check=True).stdout)
    assert shown["designs"] == [{"id": result["design_id"], "name": "dopt (10 runs)", "kind": "dopt", "rows": 10,
                                 "pending": 10}]
