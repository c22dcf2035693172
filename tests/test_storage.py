import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from engine.space.configs import config_keys
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store, StoreError, StudyNotFound
from tests.conftest import kill_after

HELPER = Path(__file__).parent / "helpers" / "campaign_writer.py"


def toy_spec(name="toy") -> StudySpec:
    levels = tuple(round(-1 + 0.2 * i, 1) for i in range(11))
    space = Space([Factor(f"x{i}", "ordinal", levels) for i in range(1, 9)])
    return StudySpec(name, space, objective="y", runner={"kind": "synthetic", "name": "toy"})


def test_schema_is_versioned_and_reopening_keeps_data(db_path):
    with Store(db_path) as store:
        assert store.schema_version >= 1
        store.create_study(toy_spec())
    with Store(db_path) as store:
        assert store.study_names() == ["toy"]
        assert store.get_study("toy").spec == toy_spec()


def test_measurements_one_row_per_repeat_and_never_duplicated(db_path):
    with Store(db_path) as store:
        study = store.create_study(toy_spec())
        config = {f"x{i}": 0.2 for i in range(1, 9)}
        first = store.record_measurement(study, config, 1.0, strategy="RS", step=1)
        second = store.record_measurement(study, {**config, "x1": "0.2"}, 1.1)  # same config, next repeat
        replay = store.record_measurement(study, config, 9.9, repeat=0)  # a replay of repeat 0
        failed = store.record_measurement(study, {**config, "x2": 1.0}, None, "timeout", error="killed after 5 s")
        assert first and second and failed and replay is None
        rows = store.measurements("toy")
        assert rows["repeat"].tolist() == [0, 1, 0]
        assert rows["value"].tolist()[:2] == [1.0, 1.1] and pd.isna(rows["value"].iloc[2])
        assert rows["status"].tolist() == ["ok", "ok", "timeout"]
        assert rows["error"].iloc[2] == "killed after 5 s"
        assert rows["strategy"].iloc[0] == "RS" and rows["host"].notna().all()
        with pytest.raises(StoreError, match="status 'weird'"):
            store.record_measurement(study, config, 1.0, "weird")


def test_table_study_listing_and_delete(db_path):
    space = Space([Factor("a", "integer", (1, 2, 3)), Factor("b", "boolean", None)])
    spec = StudySpec("tab", space, objective="t", runner={"kind": "table"})
    table = pd.DataFrame({"a": [1, 2, 3, 1], "b": [True, True, False, False], "value": [3.0, 2.0, None, 1.5],
                          "status": ["ok", "ok", "failed", "ok"], "error": [None, None, "RuntimeFailedConfig", None]})
    with Store(db_path) as store:
        store.create_study(spec, table)
        listing = store.list_studies().set_index("name")
        assert listing.loc["tab", "table_rows"] == 4 and listing.loc["tab", "table_valid"] == 3
        stored = store.study_table("tab")
        assert stored[["a", "b"]].values.tolist() == table[["a", "b"]].values.tolist()
        assert stored["error"].iloc[2] == "RuntimeFailedConfig"
        with pytest.raises(StoreError, match="already exists"):
            store.create_study(spec, table)
        store.delete_study("tab")
        assert store.study_names() == []
        with pytest.raises(StudyNotFound, match="not found"):
            store.get_study("tab")


def test_designs_track_pending_rows_and_decisions_are_logged(db_path):
    with Store(db_path) as store:
        study = store.create_study(toy_spec())
        design = study.spec.space.sample(6, seed=1)
        design_id = store.save_design(study, design, name="lhs", kind="lhs", forced=[True] + [False] * 5)
        assert store.designs("toy").iloc[0]["pending"] == 6
        store.record_measurement(study, design.iloc[0].to_dict(), 0.5, design_id=design_id)
        pending = store.design_rows("toy", design_id, pending_only=True)
        assert len(pending) == 5 and store.designs("toy").iloc[0]["pending"] == 5
        assert store.design_rows("toy", design_id)["forced"].tolist()[0]
        decision = store.log_decision(study, kind="fix-factors", proposed={"x1": 1.0}, chosen={"x1": 0.8},
                                      outcome="edited", actor="alice", explanation="x1: F = 48.2",
                                      evidence=[{"term": "x1", "F": 48.2}], step=1)
        log = store.decisions("toy")
        assert log["id"].tolist() == [decision] and log["actor"].iloc[0] == "alice"
        noted = store.log_decision(study, kind="fix-factors", proposed={}, chosen=None, outcome="rejected",
                                   actor="bob", note="re-measure x2 first")
        assert store.decisions("toy").set_index("id").loc[noted, "note"] == "re-measure x2 first"
        assert store.study_notes("toy") == ""
        store.save_study_notes(study, "# Plan\n- tile first")
        store.save_study_notes(study, "# Plan\n- unroll first")
        assert store.study_notes("toy") == "# Plan\n- unroll first"


def test_a_file_written_before_decision_notes_gains_the_column_and_keeps_its_log(db_path):
    import duckdb

    from storage.schema import MIGRATIONS

    con = duckdb.connect(str(db_path))
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description VARCHAR,"
                " applied_at TIMESTAMP DEFAULT current_timestamp)")
    for version, description, sql in MIGRATIONS[:2]:
        con.execute(sql)
        con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", [version, description])
    con.execute("INSERT INTO decisions (study_id, kind, proposed, outcome, actor) VALUES (1, 'fix-factors', '{}',"
                " 'accepted', 'ana')")
    con.close()
    with Store(db_path) as store:
        assert store.schema_version >= 3
        log = store._df("SELECT actor, note FROM decisions", [])
        assert log["actor"].tolist() == ["ana"] and log["note"].isna().all()


def test_spec_update_is_refused_once_data_exists(db_path):
    with Store(db_path) as store:
        study = store.create_study(toy_spec())
        store.update_study_spec("toy", toy_spec("toy2"))
        study = store.get_study("toy2")
        store.record_measurement(study, {f"x{i}": 0.0 for i in range(1, 9)}, 1.0)
        with pytest.raises(StoreError, match="already has data"):
            store.update_study_spec("toy2", toy_spec("toy3"))


def test_a_second_process_gets_one_clear_sentence_when_the_file_is_locked(db_path):
    with Store(db_path):
        code = f"from storage import Store\nStore({str(db_path)!r})"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "StoreLockedError" in result.stderr and "in use by another process" in result.stderr


def test_unwritable_paths_are_reported(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "missing" / "x.duckdb")
    if os.geteuid() != 0:  # root can write anywhere
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        with pytest.raises(StoreError):
            Store(locked / "x.duckdb")


def test_killed_writer_loses_nothing_and_resume_does_not_duplicate(db_path):
    with Store(db_path) as store:
        study = store.create_study(toy_spec())
        design = study.spec.space.sample(40, seed=5)
        design_id = store.save_design(study, design, name="random", kind="random")
    command = [sys.executable, str(HELPER), str(db_path), "toy", str(design_id), "0.05"]
    committed = kill_after(command, 12, lambda line: line.split()[1])
    with Store(db_path) as store:
        after_crash = store.measurements("toy")
    keys = set(config_keys(toy_spec().space, after_crash))
    assert set(committed) <= keys and len(after_crash) < 40
    # resume: only the pending rows are measured
    subprocess.run(command[:-1] + ["0"], check=True, capture_output=True, timeout=120)
    with Store(db_path) as store:
        final = store.measurements("toy")
        assert store.designs("toy").iloc[0]["pending"] == 0
    assert len(final) == 40
    assert not final.duplicated(subset=list(toy_spec().space.names)).any()
    merged = after_crash.merge(final, on=list(toy_spec().space.names), suffixes=("_before", "_after"))
    assert (merged["measurement_id_before"] == merged["measurement_id_after"]).all()
