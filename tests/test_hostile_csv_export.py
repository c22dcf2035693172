"""CSV exports are safe to open in a spreadsheet and read back exactly (issue 29).

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (``=HYPERLINK(...)``,
``-2+3+cmd|' /C calc'!A0``), and a leading tab, carriage return or blank does not stop it. By the OWASP rule every
such text cell is written with a ``'`` in front; numbers (``-3``, ``-1e-05``) stay numbers. ``tunelab import
table`` takes the ``'`` off again, so a study's text survives export → import unchanged, a text that starts with a
``'`` of its own included.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from engine.io.best import BestConfig, export_best
from engine.io.export import study_to_csv
from engine.io.table_import import import_table
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from tests.conftest import cli, run_cli

SPEC = StudySpec("Hostile text", Space([Factor("mode", "categorical", ("a", "b")), Factor("n", "ordinal", (1, 2))]),
                 objective="t", runner={"kind": "table"})
#: A cell a spreadsheet would read as a formula: one of = + - @ first (after any blanks), or a tab or CR first.
FORMULA = re.compile(r"^(?:\s*[=+\-@]|[\t\r])")
NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")

#: Text shaped to hit the rule's edges: its characters, blanks of every kind, quotes, separators, line breaks.
AWKWARD = hs.text(
    alphabet=hs.sampled_from(list("=+-@'\" \t\r\n,;x1.eE") + ["\u00a0", "\u3000", "\x0b", "\x1f", "\u2028", "é"]),
    min_size=1, max_size=8,
) | hs.sampled_from(["=1+2", " =1+2", "\t=1", "\r=1", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "+1", "-3", "-1e-05",
                     "'", "''", "'=1", "'''=1", "' x", "x ", " ", "-", "-inf", "=", "'-O3", "-O3", "é=1"])


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def _unsafe(cells: list[str]) -> list[str]:
    return [cell for cell in cells if FORMULA.match(cell) and not NUMBER.match(cell)]


def _reimport(text: str) -> pd.DataFrame:
    buffer = io.BytesIO(text.encode("utf-8"))
    buffer.name = "Hostile text.csv"
    return import_table(buffer, "t").table


@settings(max_examples=200, deadline=None, derandomize=True)
@given(levels=hs.lists(AWKWARD, min_size=1, max_size=4), errors=hs.lists(AWKWARD, min_size=1, max_size=4))
def test_text_cells_round_trip_exactly_and_none_is_a_formula(levels, errors):
    # two plain levels keep the column categorical and varying, whatever the drawn text looks like
    modes = ["plain", "other", *levels]
    rows = len(modes)
    failed = [f"failed: {e}" if i % 2 else e for i, e in enumerate(errors)][:rows]
    measurements = pd.DataFrame({
        "mode": modes,
        "n": [1 + i % 2 for i in range(rows)],
        "value": [float(i) - 2.5 for i in range(rows - len(failed))] + [np.nan] * len(failed),
        "status": ["ok"] * (rows - len(failed)) + ["failed"] * len(failed),
        "error": pd.Series([None] * (rows - len(failed)) + failed, dtype=object),
    })
    text = study_to_csv(SPEC, measurements)
    assert _unsafe(_cells(text)) == []
    table = _reimport(text)
    assert table["mode"].tolist() == modes
    assert table["error"].tolist() == measurements["error"].tolist()
    assert table["value"].tolist()[: rows - len(failed)] == measurements["value"].tolist()[: rows - len(failed)]


def test_numbers_stay_numbers_and_text_gets_one_quote():
    measurements = pd.DataFrame({"mode": ["-3", "=1+2", " =1+2", "-O3", "'=x", "'plain"], "n": [1, 2, 1, 2, 1, 2],
                                 "value": [-3.0, -1e-05, 2.0, -0.5, 1.0, 1.5], "status": ["ok"] * 6,
                                 "error": pd.Series([None] * 6, dtype=object), "step": [-1, -2, 0, 1, 2, 3]})
    rows = list(csv.reader(io.StringIO(study_to_csv(SPEC, measurements))))
    assert [row[0] for row in rows[1:]] == ["-3", "'=1+2", "' =1+2", "'-O3", "''=x", "'plain"]
    assert [row[2] for row in rows[1:]] == ["-3.0", "-1e-05", "2.0", "-0.5", "1.0", "1.5"]
    assert [row[5] for row in rows[1:]] == ["-1", "-2", "0", "1", "2", "3"]


def test_a_minus_infinity_is_not_left_as_a_formula():
    measurements = pd.DataFrame({"mode": ["a", "b"], "n": [1, 2], "value": [1.0, 2.0], "status": ["ok", "ok"],
                                 "error": [None, None], "bound": [-np.inf, 0.5]})
    text = study_to_csv(SPEC, measurements)
    assert _unsafe(_cells(text)) == [] and "'-inf" in text


def test_best_configuration_csv_quotes_formula_text():
    best = BestConfig("Hostile text", "t", "minimize", {"mode": "=HYPERLINK(\"http://x\")", "n": -2, "flag": " @x"},
                      -1.5, lower=-2.0, upper=-1.0, repeats=2)
    text = export_best(best, "csv")
    assert _unsafe(_cells(text)) == []
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["mode"] == "'=HYPERLINK(\"http://x\")" and row["flag"] == "' @x"
    assert (row["n"], row["t"], row["lower"]) == ("-2", "-1.5", "-2.0")


HOSTILE_TABLE = (
    'mode,n,t,status,error\n'
    '=1+2,1,1.5,ok,\n'
    '"-2+3+cmd|\' /C calc\'!A0",2,-0.5,ok,\n'
    '@SUM(A1),1,,failed,"=HYPERLINK(""http://evil"")"\n'
    'plain,2,,failed,"-1+1"\n'
    "''quoted,1,-3,ok,\n"
)


def test_cli_exports_hold_no_formula_and_import_back_unchanged(tmp_path):
    db = tmp_path / "t.duckdb"
    (tmp_path / "hostile.csv").write_text(HOSTILE_TABLE, encoding="utf-8")
    assert cli("import", "table", str(tmp_path / "hostile.csv"), "--objective", "t", "--name", "hostile",
               db=db).returncode == 0
    run_cli("export", "study", "hostile", "--format", "csv", "--out", str(tmp_path / "study.csv"), db=db, check=True)
    assert cli("export", "best", "--study", "hostile", "--format", "csv", "--out", str(tmp_path / "best.csv"),
               db=db).returncode == 0
    for name in ("study.csv", "best.csv"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert _unsafe(_cells(text)) == [], name
    study = list(csv.DictReader(io.StringIO((tmp_path / "study.csv").read_text(encoding="utf-8"))))
    assert [row["mode"] for row in study] == ["'=1+2", "'-2+3+cmd|' /C calc'!A0", "'@SUM(A1)", "plain", "''quoted"]
    assert cli("import", "table", str(tmp_path / "study.csv"), "--objective", "t", "--name", "again",
               db=db).returncode == 0
    for name in ("hostile", "again"):
        assert cli("export", "study", name, "--format", "json", "--out", str(tmp_path / f"{name}.json"),
                   db=db).returncode == 0
    first, second = (json.loads((tmp_path / f"{name}.json").read_text())["measurements"] for name in ("hostile", "again"))
    assert second == first
    assert [row["error"] for row in first][2:4] == ['=HYPERLINK("http://evil")', "-1+1"]


def test_design_out_quotes_formula_levels_and_reads_back_as_candidates(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: d\nobjective: t\nfactors:\n"
                    "  - {name: opt, kind: categorical, levels: ['-O3', '=1+2', '@x', plain]}\n"
                    "  - {name: n, kind: ordinal, levels: [-2, 4]}\n", encoding="utf-8")
    out = tmp_path / "design.csv"
    assert cli("design", "factorial", "--spec", str(spec), "--out", str(out)).returncode == 0
    cells = _cells(out.read_text(encoding="utf-8"))
    assert _unsafe(cells) == [] and {"'-O3", "'=1+2", "'@x", "-2"} <= set(cells)
    again = tmp_path / "again.csv"
    result = cli("design", "factorial", "--candidates", str(out), "--out", str(again), "--json")
    assert result.returncode == 0, result.stderr
    assert sorted({row["opt"] for row in json.loads(result.stdout)["design"]}) == ["-O3", "=1+2", "@x", "plain"]
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


@pytest.mark.parametrize(("cell", "text"), [("'=1", "=1"), ("' x", " x"), ("''", "''"), ("'''=1", "''=1")])
def test_the_importer_takes_off_only_a_quote_the_export_would_put(cell, text):
    table = _reimport(f"mode,n,t\n'plain,1,1\n{cell},2,2\n")
    assert table["mode"].tolist() == ["'plain", text]
