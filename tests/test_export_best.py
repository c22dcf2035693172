"""Best-configuration exports parse back (the C header compiles), the HTML report is
self-contained and escaped, and the CLI writes only inside the chosen folder."""

import csv
import io
import json
import shutil
import subprocess
from html.parser import HTMLParser

import pandas as pd
import pytest
import yaml

from engine.errors import UserError
from engine.io.best import FORMATS, BestConfig, best_filename, best_measured, best_predicted, export_best
from engine.io.files import write_export
from engine.io.report_html import progress_data, study_report
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import cli, run_cli

SPACE = Space([Factor("TILE", "ordinal", (8, 16, 32)), Factor("VEC", "boolean", (False, True)),
               Factor("OPT", "categorical", ("O2", "O3")), Factor("ALPHA", "ordinal", (0.5, 1.25))])
SPEC = StudySpec("Kernel (demo) v1.2", SPACE, objective="time", runner={"kind": "synthetic"},
                 description="Tiles & <script>alert(1)</script> flags")


def measurements() -> pd.DataFrame:
    rows = [
        (8, False, "O2", 0.5, 3.0, "ok"), (8, False, "O2", 0.5, 3.2, "ok"),
        (16, True, "O3", 1.25, 1.0, "ok"), (16, True, "O3", 1.25, 1.2, "ok"), (16, True, "O3", 1.25, 1.1, "ok"),
        (32, True, "O2", 0.5, None, "failed"), (32, False, "O3", 0.5, 0.9, "invalid"),
    ]
    return pd.DataFrame(rows, columns=["TILE", "VEC", "OPT", "ALPHA", "value", "status"])


def test_best_measured_is_the_best_mean_of_ok_repeats_with_its_interval():
    best = best_measured(SPEC, measurements())
    assert best.config == {"TILE": 16, "VEC": True, "OPT": "O3", "ALPHA": 1.25}
    assert best.value == pytest.approx(1.1) and best.repeats == 3
    assert best.lower < 1.1 < best.upper
    assert best.upper - best.lower == pytest.approx(2 * 4.302653 * 0.1 / 3**0.5, rel=1e-5)  # t(0.975, 2)
    slowest = best_measured(StudySpec("s", SPACE, objective="time", direction="maximize"), measurements())
    assert slowest.config["TILE"] == 8 and slowest.value == pytest.approx(3.1)
    with pytest.raises(UserError, match="no successful measurement"):
        best_measured(SPEC, measurements().assign(status="failed"))


@pytest.fixture
def best():
    return best_measured(SPEC, measurements())


def test_a_predicted_best_writes_no_level_for_a_factor_the_model_does_not_determine():
    point = {"TILE": 16, "VEC": True, "OPT": "O2", "ALPHA": 0.5}
    best = best_predicted(SPEC, point, 1.5, 1.0, 2.0, undetermined=["OPT", "ALPHA"])
    assert best.config == {"TILE": 16, "VEC": True} and best.undetermined == ("OPT", "ALPHA")
    doc = json.loads(export_best(best, "json"))
    assert doc["configuration"] == {"TILE": 16, "VEC": True} and doc["undetermined"] == ["OPT", "ALPHA"]
    assert yaml.safe_load(export_best(best, "yaml"))["undetermined"] == ["OPT", "ALPHA"]
    assert list(csv.DictReader(io.StringIO(export_best(best, "csv"))))[0].keys() >= {"TILE", "VEC"}
    assert "OPT" not in export_best(best, "csv").splitlines()[0].split(",")
    header = export_best(best, "header")
    assert "/* not determined by the model: OPT, ALPHA */" in header and "#define OPT" not in header
    assert "# not determined by the model: OPT, ALPHA" in export_best(best, "env")
    t4 = json.loads(export_best(best, "t4"))
    assert "OPT" not in t4["results"][0]["configuration"] and t4["metadata"]["tunelab"]["undetermined"] == ["OPT", "ALPHA"]
    assert json.loads(export_best(best_measured(SPEC, measurements()), "json"))["undetermined"] == []


def test_json_yaml_csv_and_t4_parse_back(best):
    doc = json.loads(export_best(best, "json"))
    assert doc["configuration"] == best.config and doc["value"] == pytest.approx(1.1)
    assert doc["source"] == "measured" and doc["interval"]["level"] == 0.95
    assert yaml.safe_load(export_best(best, "yaml")) == doc
    row = next(csv.DictReader(io.StringIO(export_best(best, "csv"))))
    assert (row["TILE"], row["VEC"], row["OPT"], row["ALPHA"]) == ("16", "True", "O3", "1.25")
    assert float(row["time"]) == pytest.approx(1.1) and row["repeats"] == "3"
    t4 = json.loads(export_best(best, "t4"))
    assert t4["schema_version"] == "1.0.0"
    result = t4["results"][0]
    assert {"configuration", "times", "invalidity", "correctness"} <= set(result)
    assert result["configuration"] == best.config and result["invalidity"] == "correct"
    assert result["times"]["runtimes"] == pytest.approx([1.0, 1.2, 1.1])
    assert result["measurements"][0]["name"] == "time"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_c_header_compiles_and_holds_the_values(best, tmp_path):
    (tmp_path / "best.h").write_text(export_best(best, "header"))
    (tmp_path / "check.c").write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "best.h"\n#include "best.h"\n'
        '_Static_assert(TILE == 16, "TILE");\n_Static_assert(VEC == 1, "VEC");\n'
        'int main(void) { printf("%s %.2f\\n", OPT, ALPHA); return strcmp(OPT, "O3") != 0; }\n')
    subprocess.run(["gcc", "-Wall", "-Werror", "-o", str(tmp_path / "check"), str(tmp_path / "check.c")], check=True,
                   capture_output=True)
    run = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, check=True)
    assert run.stdout == "O3 1.25\n"


def test_the_env_file_is_sourced_by_sh(tmp_path):
    spec = StudySpec("env", Space([Factor("NAME", "categorical", ("a b", "it's")), Factor("ON", "boolean", (False, True))]))
    best = best_predicted(spec, {"NAME": "it's", "ON": True}, 2.5, 2.0, 3.0)
    path = write_export(export_best(best, "env"), tmp_path, best_filename(best, "env"))
    shown = subprocess.run(["sh", "-c", 'set -a; . "$1"; printf "%s|%s" "$NAME" "$ON"', "sh", str(path)],
                           capture_output=True, text=True, check=True)
    assert shown.stdout == "it's|1"
    assert json.loads(export_best(best, "json"))["interval"] == {"level": 0.95, "lower": 2.0, "upper": 3.0}


def test_names_that_cannot_be_macros_and_unknown_formats_are_refused():
    spec = StudySpec("u", Space([Factor("größe", "ordinal", (1, 2))]))
    best = BestConfig("u", "time", "minimize", {"größe": 1}, 1.0)
    with pytest.raises(UserError, match="C header"):
        export_best(best, "header")
    assert "größe" in export_best(best, "json")
    with pytest.raises(UserError, match="format 'xml'"):
        export_best(best, "xml")
    with pytest.raises(UserError, match="lacks factor"):
        best_predicted(spec, {}, 1.0)


def test_file_names_are_safe_and_stay_in_the_folder(best, tmp_path):
    assert set(FORMATS) == {"json", "yaml", "csv", "header", "env", "t4"}
    assert best_filename(best, "header") == "Kernel (demo) v1.2-best.h"
    assert best_filename(BestConfig("..", "t", "minimize", {}, 1.0), "t4") == "-best.t4.json"
    with pytest.raises(UserError):
        write_export("x", tmp_path, "../escape.h")
    assert not (tmp_path.parent / "escape.h").exists()


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.scripts = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs.get("src"))
        assert "href" not in attrs or attrs["href"].startswith("#")


def test_the_report_is_self_contained_and_escapes_text(best):
    import plotly.graph_objects as go

    figure = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    anova = pd.DataFrame({"term": ["TILE", "Residuals"], "df": [2, 4], "F": [12.5, None], "p": [0.01, None]})
    decisions = pd.DataFrame([{"id": 1, "step": 1, "kind": "fix", "outcome": "accepted", "actor": "ana",
                               "chosen": '{"TILE": 16}', "explanation": "TILE <b>matters</b>", "created_at": "2026-01-01"}])
    designs = pd.DataFrame([{"id": 3, "name": "D-opt", "kind": "doptimal", "formula": "~ TILE + VEC", "rows": 12,
                             "pending": 0}])
    html = study_report(SPEC, measurements(), designs=designs, anova={"step 1": anova}, decisions=decisions,
                        figures=[("bars", figure), ("drawn", "<svg xmlns='http://www.w3.org/2000/svg'></svg>")],
                        best=best, notes="Tile <i>first</i>\nthen unroll")
    parser = _Collector()
    parser.feed(html)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "TILE &lt;b&gt;matters&lt;/b&gt;" in html
    assert "<h2>Notes</h2>" in html and "Tile &lt;i&gt;first&lt;/i&gt;\nthen unroll" in html
    for text in ("Search space", "Measurements", "Best configuration (measured)", "Designs", "ANOVA", "step 1",
                 "Decisions log", "Residuals", "D-opt", "OPT = 0.5"[:3]):
        assert text in html
    assert parser.tags.count("svg") >= 2 and "polyline" in html  # built-in progress chart + the given SVG
    assert all(src is None for src in parser.scripts)  # plotly.js is inline, nothing fetched
    assert html.count("Plotly.newPlot") == 1
    with pytest.raises(ValueError, match="SVG"):
        study_report(SPEC, measurements(), figures=[("x", "<img src=x>")])
    progress = progress_data(SPEC, measurements())
    assert progress["best_so_far"].tolist() == [3.0, 3.0, 1.0, 1.0, 1.0]


def test_export_best_and_report_from_the_cli(db_path, tmp_path):
    with Store(db_path) as store:
        study = store.create_study(SPEC)
        for row in measurements().itertuples(index=False):
            config = {"TILE": row.TILE, "VEC": row.VEC, "OPT": row.OPT, "ALPHA": row.ALPHA}
            store.record_measurement(study, config, row.value, row.status)
    out = tmp_path / "out"
    out.mkdir()
    for fmt in ("json", "header"):  # into a folder: the default, sanitised name (json in a real process)
        result = (run_cli if fmt == "json" else cli)("export", "best", "--study", SPEC.name, "--format", fmt, "--out",
                                                     str(out), "--json", db=db_path, check=True)
        assert json.loads(result.stdout)["path"].startswith(str(out))
    cli("export", "best", "--study", SPEC.name, "--format", "t4", "--out", str(out / "kt.json"), db=db_path, check=True)
    assert sorted(p.name for p in out.iterdir()) == ["Kernel (demo) v1.2-best.h", "Kernel (demo) v1.2-best.json",
                                                     "kt.json"]
    assert json.loads((out / "Kernel (demo) v1.2-best.json").read_text())["configuration"]["TILE"] == 16
    assert json.loads((out / "kt.json").read_text())["results"][0]["configuration"]["OPT"] == "O3"
    report = run_cli("export", "report", "--study", SPEC.name, "--out", str(tmp_path / "report.html"), db=db_path,
                     check=True)
    assert "report.html" in report.stdout and "<h2>Search space</h2>" in (tmp_path / "report.html").read_text()
    with Store(db_path) as store:
        assert len(store.exports(SPEC.name)) == 4
    empty = StudySpec("empty", SPACE)
    with Store(db_path) as store:
        store.create_study(empty)
    failed = cli("export", "best", "--study", "empty", "--out", str(out), db=db_path)
    assert failed.returncode == 2 and "no successful measurement" in failed.stderr
    cli("export", "report", "--study", "empty", "--out", str(out), db=db_path, check=True)
    assert (out / "empty-report.html").exists()
