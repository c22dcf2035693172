"""CSV table imports: factor inference, objective rules, the Laplacian figures."""

from __future__ import annotations

import gzip
import io
import math

import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.io.export import study_to_csv
from engine.io.paths import data_dir
from engine.io.table_import import import_table
from engine.space.factors import Factor, Space
from engine.study import PROVENANCE_COLUMNS, StudySpec


def _csv(text: str) -> io.BytesIO:
    buffer = io.BytesIO(text.encode("utf-8"))
    buffer.name = "bench.csv"
    return buffer


@pytest.fixture
def laplacian():
    root = data_dir()
    if root is None or not (root / "laplacian").is_dir():
        pytest.skip("shared data folder is absent")
    return root / "laplacian" / "search_space.csv"


def test_laplacian_figures(laplacian):
    imported = import_table(laplacian, "time_per_pixel")
    report = imported.report
    assert report["rows"] == 23_120 and report["valid_rows"] == 23_120 and report["invalid_rows"] == 0
    assert report["optimum"] == pytest.approx(1.165013e-10, rel=1e-6)
    assert report["constant_columns_dropped"] == ["vector_recompute"]
    assert report["factors"] == 7
    assert report["optimum_config"] == {
        "elements_number": 6, "y_component_number": 6, "vector_length": 1, "temporary_size": 2,
        "load_overlap": True, "threads_number": 1024, "lws_y": 2,
    }
    spec = imported.spec
    assert spec.name == "search_space" and spec.objective == "time_per_pixel"
    assert dict(spec.runner) == {"kind": "table", "source": "search_space.csv"}
    assert spec.space.factor("load_overlap").kind == "boolean"
    assert spec.space.factor("lws_y").levels == tuple(2**i for i in range(11))
    assert all(isinstance(v, int) for v in spec.space.factor("elements_number").levels)
    table = imported.table
    assert list(table.columns) == [*spec.space.names, "value", "status", "error"]
    assert table["elements_number"].dtype == np.int64 and table["load_overlap"].dtype == bool
    # every row is a configuration of the inferred space
    assert spec.space.valid_mask(table).all()


def test_kinds_are_inferred_per_column():
    imported = import_table(
        _csv("a,b,c,d,e,t\n1,0.5,TRUE,x,same,3\n4,0.25,false,y,same,1\n2,0.5,True,x,same,2\n"), "t"
    )
    space = imported.spec.space
    assert [f.kind for f in space.factors] == ["ordinal", "ordinal", "boolean", "categorical"]
    assert space.factor("a").levels == (1, 2, 4) and space.factor("b").levels == (0.25, 0.5)
    assert space.factor("d").levels == ("x", "y")
    assert imported.report["constant_columns_dropped"] == ["e"]
    assert imported.report["optimum"] == 1.0
    assert imported.report["optimum_config"] == {"a": 4, "b": 0.25, "c": False, "d": "y"}
    assert imported.spec.name == "bench"


def test_missing_invalid_values_are_rows_not_errors():
    imported = import_table(_csv("a,t\n1,3\n2,\n3,nan\n4,inf\n5,NA\n6,-Infinity\n7,0.5\n"), "t", direction="maximize")
    table = imported.table
    assert table["status"].tolist() == ["ok", "invalid", "invalid", "invalid", "invalid", "invalid", "ok"]
    assert math.isnan(table["value"][3])
    assert table["error"][0] is None and isinstance(table["error"][1], str)
    assert imported.report["valid_rows"] == 2 and imported.report["invalid_rows"] == 5
    assert imported.report["optimum"] == 3.0  # maximize: inf rows are not candidates


def test_missing_objective_column_lists_the_columns():
    with pytest.raises(UserError, match=r"objective column 'time' not found; columns are: a, b, t$"):
        import_table(_csv("a,b,t\n1,2,3\n2,3,4\n"), "time")


def test_text_in_objective_names_row_and_value():
    with pytest.raises(UserError, match=r"objective 't' row 3: '12ms' is not a number"):
        import_table(_csv("a,t\n1,3\n2,4\n3,12ms\n"), "t")


def test_zero_rows_and_empty_file():
    with pytest.raises(UserError, match="no data rows"):
        import_table(_csv("a,t\n"), "t")
    with pytest.raises(UserError, match="the file is empty"):
        import_table(_csv(""), "t")


def test_gzip_csv_file(tmp_path):
    path = tmp_path / "runs.csv.gz"
    path.write_bytes(gzip.compress(b"a,b,t\n1,x,3\n2,y,4\n"))
    imported = import_table(path, "t")
    assert imported.spec.name == "runs" and imported.report["rows"] == 2
    assert imported.spec.runner["source"] == "runs.csv.gz"


def test_ignore_and_empty_factor_cells():
    text = "a,machine,t\n1,h1,3\n2,,4\n"
    with pytest.raises(UserError, match=r"column 'machine' row 2: empty value"):
        import_table(_csv(text), "t")
    imported = import_table(_csv(text), "t", ignore=["machine"])
    assert imported.spec.space.names == ["a"] and imported.report["ignored_columns"] == ["machine"]
    with pytest.raises(UserError, match="ignore column 'nope' not found"):
        import_table(_csv(text), "t", ignore=["nope"])


def test_reserved_and_degenerate_columns():
    with pytest.raises(UserError, match=r"^table bench\.csv: factor 'value' is reserved: Tunelab's measurement tables"):
        import_table(_csv("a,value,t\n1,2,3\n2,3,4\n"), "t")
    with pytest.raises(UserError, match="factor 'n_repeats' is reserved"):
        import_table(_csv("a,n_repeats,t\n1,2,3\n2,3,4\n"), "t")
    with pytest.raises(UserError, match="objective 'step' is reserved"):
        import_table(_csv("a,step\n1,3\n2,4\n"), "step")
    with pytest.raises(UserError, match=r"no factor columns \(constant columns: a\)"):
        import_table(_csv("a,t\n1,3\n1,4\n"), "t")
    with pytest.raises(UserError, match="column .a. appears twice"):
        import_table(_csv("a,a,t\n1,2,3\n2,3,4\n"), "t")
    with pytest.raises(UserError, match="must be an identifier"):
        import_table(_csv("run time,t\n1,3\n2,4\n"), "t")


def test_status_column_is_honoured():
    imported = import_table(_csv("a,t,status,error\n1,3,ok,\n2,4,failed,segfault\n3,,timeout,\n4,,ok,\n"), "t")
    table = imported.table
    assert table["status"].tolist() == ["ok", "failed", "timeout", "invalid"]
    assert table["error"].tolist() == [None, "segfault", None, None]
    assert math.isnan(table["value"][1])
    with pytest.raises(UserError, match=r"status row 1: 'great' is not one of"):
        import_table(_csv("a,t,status\n1,3,great\n2,4,ok\n"), "t")


def test_malformed_csv_is_one_line():
    with pytest.raises(UserError, match="not valid CSV") as info:
        import_table(_csv('a,t\n1,2\n3,4,5,6\n"x'), "t")
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match=r"^table x\.csv: no such file \('/nonexistent/x\.csv'\)$"):
        import_table("/nonexistent/x.csv", "t")  # the name once, and where it was looked for


def test_a_measured_study_export_imports_back_to_its_factors():
    """The columns saying how each repeat was measured are not factors: as factors they broke the study once
    measured (a second 'step' column), and ``started_at`` made every row its own configuration."""
    spec = StudySpec("m", Space([Factor("a", "ordinal", (1, 2))]), objective="t", runner={"kind": "synthetic"})
    measured = pd.DataFrame({"a": [1, 1, 2], "value": [3.0, 3.5, 1.0], "status": ["ok"] * 3, "error": [None] * 3,
                             "repeat": [0, 1, 0], "host": ["h1", "h2", "h1"], "strategy": ["RS", "RS", "LHS"],
                             "step": [0, 1, 2], "design_id": [None, 1, 2], "measurement_id": [1, 2, 3],
                             "started_at": pd.to_datetime(["2024-05-01 10:00:00", "2024-05-01 10:00:01", None]),
                             "finished_at": pd.to_datetime(["2024-05-01 10:00:02"] * 3)})
    imported = import_table(_csv(study_to_csv(spec, measured)), "t")
    assert imported.spec.space.names == ["a"] and imported.table["value"].tolist() == [3.0, 3.5, 1.0]
    assert sorted(imported.report["provenance_columns_dropped"]) == sorted(PROVENANCE_COLUMNS)
