"""A saved peer run (bench/peers.py --out) imported as a comparison and shown on the Compare page beside
Tunelab's strategies."""

from __future__ import annotations

import json
import math

import pytest

from engine.compare.peers import peer_comparison, read_peer_rows
from engine.errors import UserError
from engine.io.table_import import MAX_IMPORT_BYTES
from storage import Store
from tests.test_compare_naming import alpha_comparison, compare_page, make_tables, widget
from workflows.compare import saved_comparisons

ROWS = [{"space": "s", "method": "KT pso", "rep": r, "trace": [3.0, 2.0, 1.5, 1.0]} for r in range(3)]
ROWS += [{"space": "s", "method": "Tunelab AUTO", "rep": r, "budget": b, "trace": [2.0, 1.0][:b], "used": b}
         for r in range(2) for b in (2, 4)]
ROWS += [{"space": "other", "method": "Optuna TPE", "rep": 0, "trace": [1.0]}]


def test_a_peer_run_is_a_comparison_at_one_budget():
    comparison = peer_comparison(ROWS, "s", 2, optimum=0.5)
    runs = comparison.runs
    assert comparison.strategies == ["KT pso", "Tunelab AUTO"] and comparison.params["budget"] == 2
    assert runs[runs["strategy"] == "KT pso"]["best_slowdown"].tolist() == [2.0] * 3  # the trace's prefix
    assert runs[runs["strategy"] == "Tunelab AUTO"]["value"].tolist() == [0.5, 0.5]
    with pytest.raises(UserError, match="no runs on space 'nope' \\(it has other, s\\)"):
        peer_comparison(ROWS, "nope", 2, 1.0)
    assert peer_comparison(ROWS, "s", 3, 1.0).strategies == ["KT pso"]  # Tunelab's ran at 2 and 4 only
    with pytest.raises(UserError, match="no runs on 'other' at budget 3"):
        peer_comparison([{**ROWS[-1], "budget": 1}], "other", 3, 1.0)


def test_bad_peer_files_are_one_line(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read_peer_rows(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(UserError, match="not JSON"):
        read_peer_rows(bad)
    bad.write_text(json.dumps([{"space": "s", "method": "m", "rep": 0}]))
    with pytest.raises(UserError, match="run 0 has no 'trace'"):
        read_peer_rows(bad)


def _run(**changed):
    return {"space": "s", "method": "KT pso", "rep": 0, "trace": [3.0, 1.5], **changed}


_BAD_RUNS = [
    ("negative slowdown", [_run(), _run(trace=[2.0, -1.0])], "run 1 (KT pso on s): trace[1] is -1.0"),
    ("nan slowdown", [_run(trace=[math.nan])], "run 0 (KT pso on s): trace[0] is nan"),
    ("-inf slowdown", [_run(trace=[-math.inf])], "trace[0] is -inf"),
    ("below the best", [_run(trace=[0.5])], "trace[0] is 0.5: a slowdown is ≥ 1"),
    ("boolean in trace", [_run(trace=[True])], "trace[0] is True"),
    ("huge integer in trace", [_run(trace=[10**400])], "trace[0] is 1000000000"),
    ("trace not a list", [_run(trace={"a": 1})], "run 0 (KT pso on s): 'trace' is {'a': 1}, expected a list"),
    ("rep text", [_run(rep="x")], "run 0 (KT pso on s): 'rep' is 'x', expected an integer 0..2147483647"),
    ("rep negative", [_run(rep=-3)], "'rep' is -3, expected an integer 0..2147483647"),
    ("rep float", [_run(rep=1.0)], "'rep' is 1.0, expected an integer"),
    ("budget nan", [_run(budget=math.nan)], "'budget' is nan, expected an integer 1..2147483647"),
    ("budget zero", [_run(budget=0)], "'budget' is 0, expected an integer 1..2147483647"),
    ("used negative", [_run(used=-1)], "'used' is -1, expected an integer 0..2147483647"),
    ("space not text", [_run(space=5)], "run 0: 'space' is 5, expected a name"),
    ("method empty", [_run(method="")], "run 0: 'method' is '', expected a name"),
    ("no runs", [], "holds no runs"),
    ("not a list", {"runs": []}, "expected a list of runs"),
]


@pytest.mark.parametrize(("case", "rows", "fragment"), _BAD_RUNS, ids=[c[0] for c in _BAD_RUNS])
def test_a_peer_run_with_a_bad_field_is_refused_in_one_line(tmp_path, case, rows, fragment):
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(rows))  # NaN and Infinity as Python's json writes them
    with pytest.raises(UserError) as caught:
        read_peer_rows(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("peer run peers.json: ") and fragment in message, message


def test_infinity_means_nothing_worked_yet(tmp_path):
    path = tmp_path / "peers.json"
    path.write_text(json.dumps([_run(trace=[math.inf, 2, 1.0], used=3, cpu_s=0.5)]))
    rows = read_peer_rows(path)
    assert rows[0]["trace"] == [math.inf, 2.0, 1.0]
    runs = peer_comparison(rows, "s", 1, 1.0).runs
    assert runs["slowdown"].tolist() == [math.inf] and math.isnan(runs["value"].iloc[0])


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '[{"space": ' * 50 + '"s"' + "}]" * 50,
                                  json.dumps([_run(deep=json.loads("[" * 40 + "]" * 40))])])
def test_deeply_nested_json_is_refused_in_one_line(tmp_path, text):
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(UserError, match="peer run deep.json: lists or (mappings|objects) nested"):
        read_peer_rows(path)


def test_a_peer_file_past_the_size_limit_is_refused_before_parsing(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "w") as handle:
        handle.write("[")
        handle.write('{"space": "s", "method": "m", "rep": 0, "trace": [1.0]},' * (MAX_IMPORT_BYTES // 50))
        handle.write("1]")
    with pytest.raises(UserError, match=f"peer run huge.json: more than {MAX_IMPORT_BYTES:,} bytes"):
        read_peer_rows(path)


def test_space_names_stay_on_one_line(tmp_path):
    with pytest.raises(UserError) as caught:
        peer_comparison([_run(space="a\nb")], "nope", 2, 1.0)
    assert "\n" not in str(caught.value) and "a?b" in str(caught.value)


@pytest.mark.parametrize(("content", "fragment"), [
    (json.dumps([_run(trace=[math.nan])]), "is nan: a slowdown is ≥ 1"),  # the page escapes Markdown: trace\\[0\\]
    ("[" * 100_000 + "]" * 100_000, "nested"),
], ids=["nan trace", "deep"])
def test_the_compare_page_refuses_a_bad_peer_run_in_one_line(db_path, tmp_path, monkeypatch, content, fragment):
    make_tables(db_path)
    ours = alpha_comparison(db_path)
    at = compare_page(db_path, monkeypatch)
    at.selectbox(key="cmp_study").set_value("alpha").run()
    bad = tmp_path / "bad.json"
    bad.write_text(content.replace('"s"', json.dumps("alpha")))
    widget(at.text_input, "File").input(str(bad))
    widget(at.button, "Import").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "\n" not in errors[0] and fragment in errors[0], errors
    with Store(db_path) as store:
        assert saved_comparisons(store, "alpha")["id"].tolist() == [ours]  # nothing stored
