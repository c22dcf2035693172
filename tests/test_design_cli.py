"""``tunelab design``: the real console script on candidate tables and spec files."""

from __future__ import annotations

import gzip
import itertools
import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import cli, run_cli

SPEC = """
name: cli design
objective: time
factors:
  - {name: tile, kind: ordinal, levels: [1, 2, 4, 8, 16]}
  - {name: unroll, kind: integer, low: 1, high: 4}
  - {name: vec, kind: boolean}
  - {name: layout, kind: categorical, levels: [row, col]}
constraints:
  - tile * unroll <= 32
"""



@pytest.fixture(scope="module")
def grid_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("design_cli")
    frame = pd.DataFrame(np.array(list(itertools.product([-1.0, -0.5, 0.0, 0.5, 1.0], repeat=2))), columns=["a", "b"])
    path = folder / "grid.csv.gz"
    with gzip.open(path, "wt") as handle:
        frame.to_csv(handle, index=False)
    (folder / "spec.yaml").write_text(SPEC)
    return path


def test_dopt_json_reports_criteria_and_rows(grid_csv):
    args = ["design", "dopt", "--candidates", str(grid_csv), "--formula", "~ a + b + I(a^2) + I(b^2) + a:b",
            "--trials", "7", "--seed", "3", "--json"]
    first = json.loads(run_cli(*args, check=True).stdout)
    assert set(first["criteria"]) == {"D", "A", "I", "Ge", "Dea"}
    assert first["criteria"]["D"] == pytest.approx(0.4486908007071485, rel=1e-9)  # the brute-force optimum
    assert len(first["rows"]) == 7 and all(0 <= r < 25 for r in first["rows"])
    assert first["repeats"] == 5 and first["seconds"] > 0 and first["k"] == 6
    again = json.loads(cli(*args, check=True).stdout)
    assert again["rows"] == first["rows"]


def test_dopt_text_output_and_forced_rows(grid_csv):
    result = cli("design", "dopt", "--candidates", str(grid_csv), "--formula", "~ a + b", "--trials", "3",
                    "--forced", "12", check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("dopt: 4 runs") and "k = 3 coefficients" in lines[0]
    assert lines[1].startswith("D ") and " Ge " in lines[1] and " Dea " in lines[1]
    assert "forced rows: 12" in result.stdout
    assert lines[-1].startswith("rows: 12 ")


@pytest.mark.parametrize(
    "formula, trials, message",
    [
        ("~ a + zz", "5", "term 'zz': unknown name 'zz'"),
        ("~ a + b + I(a^2) + I(b^2) + a:b", "5", "trials 5 is fewer than the 6 coefficients"),
        ("~ a + I(-a)", "5", "are aliased"),
    ],
)
def test_dopt_errors_are_one_line(grid_csv, formula, trials, message):
    result = cli("design", "dopt", "--candidates", str(grid_csv), "--formula", formula, "--trials", trials)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_dopt_with_too_few_candidate_rows(tmp_path):
    path = tmp_path / "three.csv"
    path.write_text("a,b\n1,2\n2,1\n3,3\n")
    result = cli("design", "dopt", "--candidates", str(path), "--formula", "~ a + b + a:b", "--trials", "4")
    assert result.returncode == 2 and "3 rows are fewer than the 4 coefficients" in result.stderr


@pytest.mark.parametrize(
    "kind, extra, runs",
    [("factorial", [], 72), ("random", ["--runs", "9"], 9), ("pb", [], 8), ("fracfact", ["--runs", "8"], 8)],
)
def test_generators_from_a_spec(grid_csv, kind, extra, runs):
    spec = grid_csv.parent / "spec.yaml"
    out = grid_csv.parent / f"{kind}.csv"
    result = run_cli("design", kind, "--spec", str(spec), "--seed", "1", "--json", "--out", str(out), *extra, check=True)
    data = json.loads(result.stdout)
    design = pd.DataFrame(data["design"])
    dropped = data.get("dropped_invalid", 0)
    assert data["kind"] == kind and data["runs"] == len(design) == runs - dropped
    assert (design["tile"] * design["unroll"] <= 32).all()
    assert len(pd.read_csv(out)) == len(design)


def test_dopt_over_a_spec_space(grid_csv):
    spec = grid_csv.parent / "spec.yaml"
    data = json.loads(cli("design", "dopt", "--spec", str(spec), "--formula", "~ tile + I(1/tile) + unroll + vec + layout",
                             "--trials", "8", "--seed", "4", "--json", check=True).stdout)
    assert data["candidates"] == 72 and data["k"] == 6 and data["runs"] == 8
    design = pd.DataFrame(data["design"])
    assert (design["tile"] * design["unroll"] <= 32).all() and not design.duplicated().any()


def test_lhs_and_fracfact_text(grid_csv):
    spec = grid_csv.parent / "spec.yaml"
    lhs = run_cli("design", "lhs", "--spec", str(spec), "--runs", "12", "--seed", "2", check=True).stdout
    assert lhs.startswith("lhs: ") and "tile" in lhs
    frac = cli("design", "fracfact", "--spec", str(spec), "--generators", "layout = tile*unroll*vec", check=True).stdout
    assert "resolution 4; generators: layout = tile*unroll*vec" in frac


def test_generator_over_candidate_columns(grid_csv):
    data = json.loads(cli("design", "pb", "--candidates", str(grid_csv), "--factors", "a,b", "--json", check=True).stdout)
    assert data["runs"] == 4 and len(data["rows"]) == 4 and data["dummies"] == ["d1"]


def test_types_lists_every_generator():
    data = json.loads(run_cli("design", "types", "--json", check=True).stdout)
    assert [t["name"] for t in data] == ["factorial", "random", "lhs", "pb", "fracfact", "dopt"]
