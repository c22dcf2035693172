"""Kernel Tuner cache imports: every failure encoding of dlmt.md §7, repair, errors, the A4000 figures."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from engine.errors import UserError
from engine.io.ktcache import import_kt_cache, repair_cache_text
from engine.io.paths import data_dir

PARAMS = {"block_size_x": [16, 32], "block_size_y": [1, 2], "use_cmem": [1]}
KEYS = list(PARAMS)


def _record(bx: int, by: int, **fields) -> tuple[str, dict]:
    record = {"block_size_x": bx, "block_size_y": by, "use_cmem": 1, "time": 1.0 + bx / 100 + by,
              "times": [1.0, 1.1], "compile_time": 500.0 + bx, "timestamp": "2024-01-01 00:00:00"}
    record.update(fields)
    return f"{bx},{by},1", record


def _text(records: list[tuple[str, dict]], objective: str | None = "time", closed: bool = True) -> str:
    """A cache file laid out the way KT writes it: header, then one record per line."""
    header = {"device_name": "Test GPU", "kernel_name": "k", "problem_size": [64, 64],
              "tune_params_keys": KEYS, "tune_params": PARAMS}
    if objective is not None:
        header["objective"] = objective
    text = json.dumps(header, indent=0)[:-2] + ',\n"cache": {\n'
    text += ",\n".join(f"{json.dumps(k)}: {json.dumps(r)}" for k, r in records)
    return text + ("}\n}" if closed else ",")


def _write(tmp_path, text: str, name: str = "cache.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


ALL_FOUR = [_record(16, 1), _record(16, 2), _record(32, 1), _record(32, 2)]


def test_well_formed_cache(tmp_path):
    imported = import_kt_cache(_write(tmp_path, _text(ALL_FOUR)))
    report = imported.report
    assert report["rows"] == 4 and report["valid_rows"] == 4 and report["repaired"] is False
    assert report["factorial_size"] == 4 and report["present"] == 4 and report["exhaustive"] is True
    assert report["single_level_factors"] == ["use_cmem"]
    assert report["optimum"] == pytest.approx(2.16) and report["optimum_config"]["block_size_x"] == 16
    assert imported.spec.space.names == KEYS and imported.spec.objective == "time"
    assert imported.spec.direction == "minimize" and imported.spec.name == "cache"
    assert list(imported.table.columns) == [*KEYS, "value", "status", "error"]
    assert imported.extras["compile_time"].tolist() == [516.0, 516.0, 532.0, 532.0]
    assert "times" not in imported.extras and "timestamp" not in imported.extras


@pytest.mark.parametrize(
    ("fields", "status", "error"),
    [
        ({"time": 1e20}, "failed", "ErrorConfig"),  # KT <= 0.3.x sentinel
        ({"time": 3.5e20}, "failed", "ErrorConfig"),
        ({"time": "InvalidConfig"}, "invalid", "InvalidConfig"),  # KT 0.4 - 1.3
        ({"time": "CompilationFailedConfig"}, "failed", "CompilationFailedConfig"),
        ({"time": "RuntimeFailedConfig"}, "failed", "RuntimeFailedConfig"),
        ({"time": "ErrorConfig"}, "failed", "ErrorConfig"),
        ({"GFLOP/s": "RuntimeFailedConfig"}, "failed", "RuntimeFailedConfig"),  # any field, as KT's reader
        ({"__error__": "CompilationFailedConfig"}, "failed", "CompilationFailedConfig"),  # KT >= 1.4
        ({"__error__": "InvalidConfig", "time": None}, "invalid", "InvalidConfig"),
        ({"error": "RuntimeFailedConfig"}, "failed", "RuntimeFailedConfig"),  # development versions
        ({"__error__": "out of resources: shared memory"}, "failed", "out of resources: shared memory"),
        ({"time": float("nan")}, "failed", "ErrorConfig"),  # json writes NaN
        ({"time": float("inf")}, "failed", "ErrorConfig"),
        ({"time": None}, "failed", "ErrorConfig"),
        ({"time": "fast"}, "failed", "ErrorConfig"),
        ({"time": True}, "failed", "ErrorConfig"),
    ],
)
def test_failure_encodings(tmp_path, fields, status, error):
    records = list(ALL_FOUR)
    records[3] = _record(32, 2, **fields)
    # maximize: a 1e20 sentinel or inf would be the "best" row if it were not recognised
    imported = import_kt_cache(_write(tmp_path, _text(records)), direction="maximize")
    table = imported.table
    assert table["status"].tolist() == ["ok", "ok", "ok", status]
    assert table["error"].tolist() == [None, None, None, error]
    assert math.isnan(table["value"][3])
    assert imported.report["valid_rows"] == 3
    assert imported.report["optimum"] == pytest.approx(1.0 + 0.16 + 2)
    assert imported.report["failure_kinds"] == {error: 1}


def test_missing_objective_field_is_a_failure(tmp_path):
    key, record = _record(32, 2)
    del record["time"]
    imported = import_kt_cache(_write(tmp_path, _text([*ALL_FOUR[:3], (key, record)])))
    assert imported.table["status"].tolist()[-1] == "failed"


def test_absent_configurations_are_not_rows(tmp_path):
    imported = import_kt_cache(_write(tmp_path, _text(ALL_FOUR[:3], objective=None)))
    report = imported.report
    assert report["rows"] == 3 and report["present"] == 3 and report["absent"] == 1
    assert report["exhaustive"] is False and report["objective_field"] == "time"


def test_unterminated_file_is_repaired_like_kernel_tuner(tmp_path):
    closed = import_kt_cache(_write(tmp_path, _text(ALL_FOUR), "closed.json"))
    text = _text(ALL_FOUR, closed=False)
    assert text.endswith("},") and not text.endswith("}\n}")
    opened = import_kt_cache(_write(tmp_path, text + "\n", "open.json"))
    assert opened.report["repaired"] is True
    assert opened.table.equals(closed.table)


def test_trailing_comma_after_last_record(tmp_path):
    text = _text(ALL_FOUR)[: -len("}\n}")] + ",\n}\n}\n"
    imported = import_kt_cache(_write(tmp_path, text))
    assert imported.report["rows"] == 4 and imported.report["repaired"] is True


def test_empty_cache_section_repaired_but_refused(tmp_path):
    text = _text([])[: -len("}\n}")]
    assert text.endswith("{\n")
    with pytest.raises(UserError, match="the cache holds no records"):
        import_kt_cache(_write(tmp_path, text))


def test_repair_leaves_closed_text_alone():
    assert repair_cache_text('{"cache": {"a": {"x": 1}}}') == ('{"cache": {"a": {"x": 1}}}', False)
    assert repair_cache_text('{"cache": {"a": {"x": 1},') == ('{"cache": {"a": {"x": 1}}\n}', True)


def test_truncated_beyond_repair(tmp_path):
    text = _text(ALL_FOUR)
    cut = text[: text.rindex('"times"') + 12]
    with pytest.raises(UserError, match=r"kt-cache cut\.json: truncated beyond repair") as info:
        import_kt_cache(_write(tmp_path, cut, "cut.json"))
    assert "\n" not in str(info.value)


def test_truncated_gzip_stream(tmp_path):
    data = gzip.compress(_text(ALL_FOUR).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="kt-cache cut.json.gz: (truncated beyond repair|not valid JSON)"):
        import_kt_cache(path)


def test_not_json(tmp_path):
    with pytest.raises(UserError, match=r"kt-cache notes\.json: not valid JSON at line 1 col 1"):
        import_kt_cache(_write(tmp_path, "hello, this is not a cache\n", "notes.json"))
    broken = _text(ALL_FOUR).replace('"k",', '"k" oops', 1)
    with pytest.raises(UserError, match=r"not valid JSON at line 3 col"):
        import_kt_cache(_write(tmp_path, broken))
    with pytest.raises(UserError, match="the file is empty"):
        import_kt_cache(b"   \n")
    with pytest.raises(UserError, match="expected a JSON object"):
        import_kt_cache(b"[1, 2]")


@pytest.mark.parametrize("key", ["tune_params_keys", "tune_params", "cache"])
def test_missing_header_keys(tmp_path, key):
    doc = json.loads(_text(ALL_FOUR))
    del doc[key]
    with pytest.raises(UserError, match=f"missing '{key}'"):
        import_kt_cache(json.dumps(doc).encode())


def test_record_off_the_grid(tmp_path):
    records = [*ALL_FOUR[:3], _record(48, 2)]
    with pytest.raises(UserError, match="block_size_x=48 is not in tune_params"):
        import_kt_cache(_write(tmp_path, _text(records)))


def test_bytes_gzip_and_odd_objective_name():
    doc = json.loads(_text(ALL_FOUR))
    doc["objective"] = "GFLOP/s"
    for _, record in doc["cache"].items():
        record["GFLOP/s"] = record["time"] * 10
    data = gzip.compress(json.dumps(doc).encode())
    imported = import_kt_cache(data, name="convolution on A4000", direction="maximize")
    assert imported.spec.objective == "GFLOP_s" and imported.report["objective_field"] == "GFLOP/s"
    assert imported.spec.name == "convolution on A4000"
    assert imported.report["optimum"] == pytest.approx((1.0 + 0.32 + 2) * 10)
    assert "GFLOP/s" not in imported.extras and "time" in imported.extras


def test_boolean_and_string_params():
    doc = {"tune_params_keys": ["flag", "layout"], "tune_params": {"flag": [True, False], "layout": ["row", "col"]},
           "cache": {"True,row": {"flag": True, "layout": "row", "time": 2.0},
                     "False,col": {"flag": False, "layout": "col", "time": 1.0}}}
    imported = import_kt_cache(json.dumps(doc).encode())
    space = imported.spec.space
    assert [f.kind for f in space.factors] == ["boolean", "categorical"]
    assert imported.report["optimum_config"] == {"flag": False, "layout": "col"}
    assert imported.spec.name == "kt-cache"  # no file name, no kernel_name
    assert import_kt_cache(_text(ALL_FOUR).encode()).spec.name == "k"  # the kernel_name


@pytest.fixture
def a4000():
    root = data_dir()
    if root is None or not (root / "kernel_tuner").is_dir():
        pytest.skip("shared data folder is absent")
    return root / "kernel_tuner" / "convolution_milo_A4000.json.gz"


def test_a4000_figures(a4000):
    imported = import_kt_cache(a4000)
    report = imported.report
    assert report["rows"] == 4_362 and report["valid_rows"] == 4_201
    assert report["optimum"] == pytest.approx(1.021172, abs=5e-7)
    assert report["failure_kinds"] == {"RuntimeFailedConfig": 155, "CompilationFailedConfig": 6}
    assert report["failed_rows"] == 161 and report["invalid_rows"] == 0
    assert report["single_level_factors"] == ["use_cmem", "filter_height", "filter_width"]
    assert report["factorial_size"] == 16 * 5 * 4 * 4 * 2 * 2 * 2 and report["present"] == 4_362
    assert report["exhaustive"] is False
    assert imported.spec.name == "convolution_milo_A4000" and imported.spec.objective == "time"
    assert imported.spec.space.valid_mask(imported.table).all()
    assert len(imported.extras) == 4_362 and "compile_time" in imported.extras
