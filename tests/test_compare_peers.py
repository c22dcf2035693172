"""A saved peer run (bench/peers.py --out) imported as a comparison and shown on the Compare page beside
Tunelab's strategies."""

from __future__ import annotations

import json

import pytest

from engine.compare.peers import peer_comparison, read_peer_rows
from engine.errors import UserError
from storage import Store
from tests.test_pages import page
from workflows.compare import open_comparison, saved_comparisons

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


def test_the_compare_page_imports_a_peer_run_beside_its_own(db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNELAB_DB", str(db_path))
    at = page("compare.py").run()
    assert not at.exception
    study = at.selectbox(key="cmp_study").value
    rows = [{**row, "space": study} for row in ROWS if row["space"] == "s"]
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps(rows))
    at.text_input(key="cmp_peer_file").input(str(tmp_path / "nope.json"))
    at.button[1].click().run()  # the form's Import button
    assert any("no such file" in e.value for e in at.error) and not at.exception
    at.text_input(key="cmp_peer_file").input(str(peers))
    at.number_input(key="cmp_peer_budget").set_value(4)
    at.button[1].click().run()
    assert not at.exception and not at.error
    assert at.dataframe[0].value["strategy"].tolist() == ["KT pso", "Tunelab AUTO"]
    with Store(db_path) as store:
        saved = saved_comparisons(store, study)
        record, comparison = open_comparison(store, int(saved["id"].iloc[-1]))
    assert record["params"]["source"] == "bench/peers.py" and len(comparison.runs) == 5
