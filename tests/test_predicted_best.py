"""Issue 30 §3: one predicted best everywhere. Analyze's proposal, Export, the report and `tunelab export best
--source predicted` show the same configuration and value; every format marks a prediction as one; a prediction
worse than the measured best says so; a table study's prediction is looked up in its table, and one beyond the
table's optimum is flagged as an extrapolation. `tunelab analyze --propose` prints the page's proposal."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from engine.io.best import FORMATS, best_predicted, export_best
from engine.io.spec import TEMPLATES, parse_spec
from storage import Store
from tests.conftest import cli
from tests.test_browser_proposal import prepare
from workflows import StudySession
from workflows.demo import TOY_STUDY
from workflows.session import import_measured

CLI = [sys.executable, "-m", "app.cli"]


def accept_proposal(db: Path, formula: str | None = None, study: str = TOY_STUDY, **options) -> None:
    """Accept the next step's proposal on ``formula`` (default: the step's model) as the Analyze page does."""
    with Store(db) as store:
        session = StudySession(store, study)
        proposal = session.proposal(formula, **options)
        session.record_decision(proposal.decision.accept("tester"), proposal.step, analysis=proposal.analysis,
                                fixed=proposal.fixed)


@pytest.fixture(scope="module")
def toy_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy after the Design page's defaults (62 measurements), step 1's proposal accepted as the page does."""
    db = tmp_path_factory.mktemp("toy") / "toy.duckdb"
    prepare(db)
    accept_proposal(db)
    return db


def test_export_the_report_and_the_cli_show_the_proposal_s_point_and_value(toy_db, tmp_path):
    with Store(toy_db) as store:
        session = StudySession(store, TOY_STUDY)
        proposed = json.loads(store.decisions(TOY_STUDY)["evidence"].iloc[-1])["predicted_best"]
        best = session.best("predicted")
        report = session.report_html()
    assert best.config == proposed["point"] and best.value == pytest.approx(proposed["predicted"], rel=1e-9)
    assert best.lower < best.value < best.upper
    assert "coordinate descent" in best.search or "exact" in best.search
    assert "Best configuration predicted by the latest model (never measured)" in report and f"{best.value:.6g}" in report
    out = tmp_path / "best.json"
    done = subprocess.run([*CLI, "--db", str(toy_db), "export", "best", "--study", TOY_STUDY, "--source", "predicted",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    exported = json.loads(out.read_text())
    assert exported["configuration"] == proposed["point"] and exported["value"] == pytest.approx(proposed["predicted"])
    assert exported["prediction"]["measured"] is False


def test_every_format_marks_a_prediction_and_t4_claims_no_verified_run():
    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    point = {f"x{i}": 0.0 for i in range(1, 9)}
    best = best_predicted(spec, point, -3.0, -4.0, -2.0, search="exact", measured_best=-7.0)
    for fmt in FORMATS:
        text = export_best(best, fmt)
        assert "predicted" in text.lower(), fmt
    t4 = json.loads(export_best(best, "t4"))
    result = t4["results"][0]
    assert result["correctness"] == 0 and result["times"] == {} and result["measurements"][0]["name"] == "predicted y"
    assert result["objectives"] == ["predicted y"] and t4["metadata"]["tunelab"]["prediction"]["measured"] is False
    assert best.worse_than_measured and any("worse than the best measured -7" in w for w in best.warnings)
    for fmt in ("header", "env"):
        assert "worse than the best measured" in export_best(best, fmt), fmt
    measured = json.loads(export_best(best_predicted(spec, point, -9.0, search="exact", measured_best=-7.0), "t4"))
    assert not measured["metadata"]["tunelab"]["prediction"]["warnings"]


def test_a_worse_prediction_is_said_on_the_cli(tmp_path):
    """A model of the inert factors alone predicts about the mean, far worse than the best measurement."""
    db = tmp_path / "worse.duckdb"
    prepare(db)
    accept_proposal(db, "y ~ x2 + x4")
    with Store(db) as store:
        session = StudySession(store, TOY_STUDY)
        best = session.best("predicted")
        measured = session.measured_best_or_none()
    assert best.worse_than_measured and best.measured_best == measured.value
    done = cli("export", "best", "--study", TOY_STUDY, "--source", "predicted", "--out", str(tmp_path / "b.h"),
               "--format", "header", db=db)
    assert done.returncode == 0 and f"worse than the best measured {measured.value:.4g}" in done.stderr, done.stderr


def test_a_table_study_s_prediction_is_looked_up_in_its_table_and_an_extrapolation_is_flagged(tmp_path):
    """y = |a - 3| + b; the measurements cover a <= 3 only, where a line fits exactly and points down past a = 3:
    the model's optimum (a = 8, b = 1) is predicted at -4, the table says 6 there, and its optimum is 1."""
    rows = [{"a": a, "b": b, "y": abs(a - 3) + b} for a in range(1, 9) for b in range(1, 5)]
    source = tmp_path / "table.csv"
    pd.DataFrame(rows).to_csv(source, index=False)
    with Store(tmp_path / "t.duckdb") as store:
        imported = import_measured(store, str(source), "table", name="kink", objective="y")
        study = store.get_study(imported.spec.name)
        for row in rows:
            if row["a"] <= 3:
                store.record_measurement(study, {"a": row["a"], "b": row["b"]}, float(row["y"]))
    accept_proposal(tmp_path / "t.duckdb", "y ~ a + b", study="kink", transform="none")
    with Store(tmp_path / "t.duckdb") as store:
        best = StudySession(store, "kink").best("predicted")
    assert best.config == {"a": 8, "b": 1} and best.value == pytest.approx(-4.0, abs=1e-9)
    assert best.table_value == 6.0 and best.table_optimum == 1.0 and best.extrapolated and not best.worse_than_measured
    assert best.warnings[:2] == ["predicted y = -4, the table says 6",
                                 "the prediction -4 is better than the table's optimum 1: an extrapolation, not a "
                                 "value any configuration reaches"]
    assert best.search == "the one valid configuration the fixed factors leave"  # the decision fixed a and b


def test_analyze_propose_prints_the_page_s_proposal_in_text_and_json(toy_db, tmp_path):
    db = tmp_path / "step1.duckdb"
    prepare(db)
    with Store(db) as store:
        expected = StudySession(store, TOY_STUDY).proposal().decision
    args = [*CLI, "--db", str(db), "analyze", "--study", TOY_STUDY, "--propose"]
    text = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    for line in expected.explanation:
        assert f"- {line}" in text.stdout
    assert "Predicted best configuration: " in text.stdout and "Step 1 (fixed so far: nothing)" in text.stdout
    data = json.loads(cli("analyze", "--study", TOY_STUDY, "--propose", "--json", db=db).stdout)
    proposal = data["proposal"]
    assert proposal["fix"] == expected.proposed["fix"] and proposal["reasons"] == list(expected.explanation)
    assert proposal["predicted_best"]["point"] == expected.evidence["predicted_best"]["point"]
    assert proposal["rule"] == "factor" and len(proposal["factor_tests"]) == 8
    assert math.isfinite(proposal["predicted_best"]["predicted"])


@pytest.mark.parametrize(("extra", "words"), [
    (["--propose"], "--propose: needs --study"),
    (["--propose", "--threshold", "2"], "--threshold 2.0: expected a p-value between 0 and 1"),
    (["--propose", "--repeats", "mean"], "--propose: --predict-over, --repeats and --by do not apply"),
    ([], "--formula: required"),
])
def test_analyze_refuses_what_a_proposal_cannot_use_in_one_line(toy_db, extra, words):
    source = ["--csv", "/dev/null"] if extra == ["--propose"] else ["--study", TOY_STUDY]
    done = cli("analyze", *source, *extra, db=toy_db)
    assert done.returncode != 0 and words in done.stderr and "Traceback" not in done.stderr, done.stderr
