"""Measuring blocks into the store (mechanics only: statuses, resuming, passes, the CPU recorded; no figure
of a timing is asserted): a tiny data folder, the real harness, a real DuckDB file, the real CLI."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from engine.surrogates.difftune.measure import Settings
from storage import Store
from storage.difftune import block_measurements, cpus
from tests.conftest import run_cli
from workflows.difftune import measure_blocks

BLOCKS = ["4801c0", "4889c3480fafc0", "0f05"]  # add chain, mov + imul, syscall (refused, never run)


@pytest.fixture
def data(tmp_path, monkeypatch):
    (tmp_path / "bhive" / "sources").mkdir(parents=True)
    (tmp_path / "llvm_mca_anchor").mkdir()
    (tmp_path / "llvm_mca_anchor" / "bhive_sample2000_llvm_mca_cycles100.csv").write_text(
        "hex,n_instr,haswell_mca19\n" + "".join(f"{h},1,100\n" for h in BLOCKS))
    with gzip.open(tmp_path / "bhive" / "sources" / "a.csv.gz", "wt") as handle:
        handle.write("".join(f"{h},0.1\n" for h in BLOCKS))
    with gzip.open(tmp_path / "bhive" / "may-alias.csv.gz", "wt") as handle:
        handle.write("ffff\n")
    monkeypatch.setenv("TUNELAB_DATA", str(tmp_path))
    return tmp_path


def test_blocks_are_measured_once_per_cpu_and_pass_and_a_rerun_resumes(data, db_path):
    settings = Settings(repeats=16, min_clean=2, calibration_n=200, calibration_repeats=16)
    with Store(db_path) as store:
        first = measure_blocks(store, source="anchor", settings=settings)
        assert (first.selected, first.already_stored, first.measured) == (3, 0, 3)
        rows = block_measurements(store, first.cpu_id, 1).set_index("hex")
        assert rows.loc["0f05", "status"] == "refused" and "syscall" in rows.loc["0f05", "error"]
        measured = rows.loc[["4801c0", "4889c3480fafc0"]]
        assert set(measured["status"]) <= {"ok", "noisy"}  # a busy machine may make a batch noisy: still stored
        for _, row in measured[measured["status"] == "ok"].iterrows():
            assert row["cycles_min"] > 0 and row["repeats"]["unrolls"] == list(settings.unrolls) and row["repeats"]["ticks_a"]
        settled = int((rows["status"] != "noisy").sum())  # a noisy batch (a disturbed machine) is measured again
        again = measure_blocks(store, source="anchor", settings=settings)
        assert (again.already_stored, again.measured) == (settled, 3 - settled)
        second = measure_blocks(store, source="anchor", pass_=2, settings=settings, progress=lambda *_: None)
        assert second.measured == 3 and len(block_measurements(store, first.cpu_id)) == 6
        assert cpus(store)["cpu_id"].tolist() == [first.cpu_id]


def test_the_cli_measures_and_says_what_it_did(data, db_path):
    result = run_cli("blocks", "measure", "--source", "anchor", "--limit", "1", "--repeats", "16", "--json", db=db_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["selected"] == 1 and out["measured"] == 1 and out["cpu_id"]
    out_file = db_path.parent / "measured.csv.gz"
    exported = run_cli("blocks", "export", "--out", str(out_file), db=db_path)
    assert exported.returncode == 0, exported.stderr
    table = pd.read_csv(out_file)
    assert table["hex"].tolist() == [BLOCKS[0]] and {"status", "cycles_min", "cycles_median"} <= set(table.columns)
    bad = run_cli("blocks", "measure", "--limit", "0", db=db_path)
    assert bad.returncode != 0 and "--limit 0: must be from 1" in bad.stderr
