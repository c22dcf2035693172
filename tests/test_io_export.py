"""Study exports: JSON round trip, CSV round trip through the importer, safe file names and writing."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.io.export import parse_study_json, study_to_csv, study_to_json
from engine.io.files import safe_filename, write_export
from engine.io.spec import parse_spec
from engine.io.table_import import import_table

SPEC = parse_spec(
    """\
name: Export me
objective: time
runner: {kind: command, argv: ["./run", "{x}"]}
factors:
  - {name: x, kind: ordinal, levels: [1, 2, 4]}
  - {name: f, kind: boolean}
  - {name: mode, kind: categorical, levels: [a, "b,c"]}
  - {name: r, kind: ordinal, levels: [0.1, 0.25]}
constraints: [x <= 4]
""",
    "yaml",
)


def _measurements() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": np.array([1, 2, 4, 4], dtype=np.int64),
            "f": [True, False, True, False],
            "mode": ["a", "b,c", "a", "b,c"],
            "r": [0.1, 0.25, 0.1, 0.25],
            "value": [1.5, np.nan, 0.1 + 0.2, np.inf],
            "status": ["ok", "failed", "ok", "invalid"],
            "error": pd.Series([None, 'segfault "core"\nline 2', None, "no finite objective value"], dtype=object),
            "repeat": np.array([0, 0, 1, 0], dtype=np.int64),
            "started_at": pd.to_datetime(["2024-05-01T10:00:00Z"] * 3 + [None], utc=True),
        }
    )


def _strict_loads(text: str):
    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_round_trip():
    frame = _measurements()
    text = study_to_json(SPEC, frame, extra={"decisions": [{"step": 1, "p": np.float64(0.03)}], "nan": float("nan")})
    doc = _strict_loads(text)  # NaN and inf became null
    assert list(doc) == ["format", "version", "spec", "extra", "columns", "dtypes", "measurements"]
    assert list(doc["measurements"][0]) == list(frame.columns)
    assert doc["measurements"][1]["value"] is None and doc["measurements"][3]["value"] is None
    assert doc["extra"] == {"decisions": [{"step": 1, "p": 0.03}], "nan": None}
    back = parse_study_json(text)
    assert back.spec == SPEC
    expected = frame.copy()
    expected.loc[3, "value"] = np.nan  # inf is not JSON; it comes back missing
    pd.testing.assert_frame_equal(back.measurements, expected)
    assert back.measurements["value"][2] == 0.1 + 0.2  # full float precision
    assert back.extra["decisions"][0]["p"] == 0.03
    assert study_to_json(SPEC, frame) == study_to_json(SPEC, frame.copy())


def test_json_of_no_measurements():
    empty = _measurements().iloc[:0]
    back = parse_study_json(study_to_json(SPEC, empty))
    assert list(back.measurements.columns) == list(empty.columns) and len(back.measurements) == 0


def test_parse_study_json_errors():
    with pytest.raises(UserError, match=r"not valid JSON at line 1 col 1"):
        parse_study_json("spec: yaml?")
    with pytest.raises(UserError, match="is this a Tunelab study export"):
        parse_study_json('{"spec": {}}')
    text = study_to_json(SPEC, _measurements()).replace('"name": "Export me"', '"name": "../../x"')
    with pytest.raises(UserError, match="study name '../../x'"):
        parse_study_json(text)


def test_csv_orders_columns_and_reimports():
    frame = _measurements().drop(columns=["started_at", "repeat"])
    text = study_to_csv(SPEC, frame[["value", "status", "mode", "r", "error", "f", "x"]])
    assert text.splitlines()[0] == "x,f,mode,r,time,status,error"
    buffer = io.BytesIO(text.encode())
    buffer.name = "Export me.csv"
    imported = import_table(buffer, "time")
    assert imported.spec.space.names == SPEC.space.names
    assert imported.spec.name == "Export me"
    expected = frame.copy()
    expected.loc[3, "value"] = np.nan
    pd.testing.assert_frame_equal(imported.table, expected, check_dtype=False)
    assert imported.table["mode"].tolist() == ["a", "b,c", "a", "b,c"]


def test_csv_needs_every_factor():
    with pytest.raises(UserError, match="lack factor column 'mode'"):
        study_to_csv(SPEC, _measurements().drop(columns=["mode"]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("../x", "_x"),
        ("..", "export"),
        ("/etc/passwd", "_etc_passwd"),
        ("a\\b:c*d?.json", "a_b_c_d_.json"),
        ("study\x00\n\x1b[31m.csv", "study___[31m.csv"),
        ("  .hidden  ", "hidden"),
        ("a..b", "a.b"),
        ("CON.json", "_CON.json"),
        ("Laplacian 2019 — µs.json", "Laplacian 2019 — μs.json"),
        ("", "export"),
    ],
)
def test_safe_filename(text, expected):
    name = safe_filename(text)
    assert name == expected
    assert "/" not in name and "\\" not in name and ".." not in name and name


def test_safe_filename_keeps_extension_when_shortening():
    name = safe_filename("x" * 400 + ".json")
    assert len(name) <= 150 and name.endswith(".json")


def test_write_export(tmp_path):
    folder = tmp_path / "exports" / "nested"
    path = write_export("héllo\n", folder, "a.json")
    assert path == (folder / "a.json").resolve() and path.read_text(encoding="utf-8") == "héllo\n"
    assert write_export(b"\x00\x01", folder, "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in folder.iterdir()) == ["a.json", "b.bin"]  # no temporary left behind


@pytest.mark.parametrize("name", ["../x", "../../etc/x", "/tmp/x", "sub/x", ".", "", "..", "./x"])
def test_write_export_refuses_names_leaving_the_folder(tmp_path, name):
    folder = tmp_path / "out"
    with pytest.raises(UserError, match="is not a plain name inside"):
        write_export("data", folder, name)
    assert not (tmp_path / "x").exists()


def test_write_export_refuses_symlink_escape(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("keep")
    os.symlink(outside, folder / "link.txt")
    with pytest.raises(UserError, match="is not a plain name inside"):
        write_export("overwritten", folder, "link.txt")
    assert outside.read_text() == "keep"
