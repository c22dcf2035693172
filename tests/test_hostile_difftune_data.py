"""Hostile DiffTune data files (issue 29): a simulated data set's folder is trusted only as far as its manifest
(the shards it lists, their rows, sizes and hashes), Parquet files are bounded by their footers before any
data is decoded, and every refusal is one line naming the file; nothing already stored is lost.

One small real data set (3 anchor blocks, 40 samples in shards of 10, a real DuckDB store) is made once and
copied for each test. Parquet parameter tables get the same footer bound here; their values are tested in
test_difftune_params.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.errors import UserError
from engine.surrogates.difftune import dataset as dataset_module
from engine.surrogates.difftune.dataset import load_dataset
from engine.surrogates.difftune.params import OpParams, ParamTable, load
from storage import Store
from storage.difftune.datasets import dataset
from tests.conftest import run_cli
from workflows.difftune.dataset import dataset_folder, simulate_dataset
from workflows.difftune.surrogate import dataset_samples

SAMPLES, CHUNK, BLOCKS = 40, 10, 3
#: The issue's decompression bomb: 30 M rows in a few hundred KB.
BOMB_ROWS = 30_000_000


def _make(store: Store, samples: int = SAMPLES) -> None:
    simulate_dataset(store, arch="haswell", samples=samples, name="d", limit=BLOCKS, chunk=CHUNK)


@pytest.fixture(scope="module")
def made(data, tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """The database (its data set folder beside it) and the data set's rows."""
    db = tmp_path_factory.mktemp("made") / "tunelab.duckdb"
    with Store(db) as store:
        _make(store)
        rows = load_dataset(dataset_folder(store, "d"))
    return db, rows


@pytest.fixture
def world(made, tmp_path) -> tuple[Path, Path, pd.DataFrame]:
    """A fresh copy of the database and its data set: (database, data set folder, rows)."""
    db, rows = made
    shutil.copytree(db.parent, tmp_path / "w")
    return tmp_path / "w" / db.name, tmp_path / "w" / f"{db.name}.difftune" / "d", rows


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A Parquet file of the shards' columns: 30 M rows of zeros, a few hundred KB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.parquet"
    million = pa.table({"block": pa.array(np.zeros(2**20, dtype=np.int32)),
                        "seed": pa.array(np.zeros(2**20, dtype=np.int64)),
                        "cycles": pa.array(np.ones(2**20, dtype=np.int32))})
    with pq.ParquetWriter(path, million.schema, compression="zstd") as writer:
        for _ in range(-(-BOMB_ROWS // 2**20)):
            writer.write_table(million)
    assert path.stat().st_size < 5_000_000
    return path


def _shard(folder: Path, start: int) -> Path:
    return folder / f"part-{start:010d}.parquet"


def _relist(folder: Path, rows: dict[str, int]) -> None:
    """Append manifest lines for files a forger wrote, with their true sizes and hashes (what an attacker who
    also edits the manifest can do): only the checks on the data itself are left."""
    with open(folder / "manifest.jsonl", "a") as handle:
        for name, count in rows.items():
            data = (folder / name).read_bytes()
            handle.write(json.dumps({"file": name, "start": int(name[5:15]), "rows": count, "bytes": len(data),
                                     "sha256": hashlib.sha256(data).hexdigest()}) + "\n")


def refused(call, *names: str) -> str:
    """``call`` must raise a one-line UserError naming each of ``names``."""
    with pytest.raises(UserError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message and len(message) < 400, message
    assert all(n in message for n in names), message
    return message


def _samples(db: Path) -> pd.DataFrame:
    with Store(db) as store:
        return dataset_samples(store, "d").frame


# -- the folder holds what its manifest lists, nothing else ------------------------------------------------

@pytest.mark.parametrize("name", ["part-0000000005.parquet", "part-x.parquet", "extra.parquet"])
def test_an_extra_shard_is_refused_not_trained_on(world, name):
    db, folder, _ = world
    shutil.copy(_shard(folder, 0), folder / name)
    refused(lambda: load_dataset(folder), name)
    refused(lambda: _samples(db), name)
    _refused_to_continue(db, name)
    (folder / name).unlink()
    assert len(_samples(db)) == SAMPLES


def test_the_cli_refuses_an_extra_shard_in_one_line_and_continues_once_it_is_gone(world):
    db, folder, rows = world
    shutil.copy(_shard(folder, 10), _shard(folder, 15))
    args = ("difftune", "dataset", "--arch", "haswell", "--samples", "50", "--name", "d", "--limit", "3",
            "--chunk", "10")
    result = run_cli(*args, db=db)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "part-0000000015.parquet" in result.stderr
    _shard(folder, 15).unlink()
    with Store(db) as store:
        _make(store, 50)
    assert load_dataset(folder).iloc[:SAMPLES].equals(rows) and len(load_dataset(folder)) == 50


def _refused_to_continue(db: Path, *names: str) -> None:
    """A run that would add to the data set is refused before it simulates, and what the store holds stays."""
    with Store(db) as store:
        refused(lambda: _make(store, SAMPLES + 10), *names)
        row = dataset(store, "d")
        assert row is not None and row["samples_done"] == SAMPLES


def test_a_replaced_shard_is_refused(world):
    db, folder, _ = world
    shutil.copy(_shard(folder, 20), _shard(folder, 10))  # valid Parquet, the wrong samples
    refused(lambda: _samples(db), "part-0000000010.parquet")
    _refused_to_continue(db, "part-0000000010.parquet")


def test_a_shard_without_the_columns_is_one_line_not_a_key_error(world):
    db, folder, _ = world
    pd.DataFrame({"x": [1.5] * 10}).to_parquet(_shard(folder, 10), index=False)
    refused(lambda: _samples(db), "part-0000000010.parquet")
    _relist(folder, {})  # nothing to relist: the forged shard is checked against the original line
    _shard(folder, 10).write_bytes(b"not parquet at all")
    refused(lambda: _samples(db), "part-0000000010.parquet")


def test_a_missing_shard_is_refused(world):
    db, folder, _ = world
    _shard(folder, 20).unlink()
    refused(lambda: _samples(db), "part-0000000020.parquet")
    _refused_to_continue(db, "part-0000000020.parquet")


def test_a_folder_without_its_manifest_is_refused(world):
    db, folder, _ = world
    (folder / "manifest.jsonl").unlink()
    refused(lambda: _samples(db), "manifest")
    _refused_to_continue(db, "manifest")


# -- what a forged manifest still cannot get past -----------------------------------------------------------

@pytest.mark.parametrize(("listed", "named"), [(BOMB_ROWS, "manifest.jsonl"), (CHUNK, "part-0000000040.parquet")])
def test_a_listed_shard_bomb_is_refused_before_it_is_read(world, bomb, listed, named):
    db, folder, _ = world
    shutil.copy(bomb, _shard(folder, SAMPLES))
    _relist(folder, {_shard(folder, SAMPLES).name: listed})  # the manifest tells the truth, or what the footer denies
    started = time.perf_counter()
    refused(lambda: load_dataset(folder), named, "rows")
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(("column", "value", "named"), [
    ("block", BLOCKS, "block"), ("block", -1, "block"), ("seed", 7, "seed"), ("cycles", 0, "cycles"),
])
def test_bad_values_in_a_listed_shard_are_refused(world, column, value, named):
    db, folder, rows = world
    forged = rows.iloc[SAMPLES - CHUNK:].assign(seed=np.arange(SAMPLES, SAMPLES + CHUNK)).reset_index(drop=True)
    forged.loc[3, column] = value
    forged.astype(dataset_module.COLUMNS).to_parquet(_shard(folder, SAMPLES), index=False)
    _relist(folder, {_shard(folder, SAMPLES).name: CHUNK})
    refused(lambda: load_dataset(folder), "part-0000000040.parquet", named)


def test_a_store_that_records_more_samples_than_the_shards_hold_is_refused(world):
    db, folder, _ = world
    lines = (folder / "manifest.jsonl").read_text().splitlines(keepends=True)
    (folder / "manifest.jsonl").write_text("".join(lines[:-1]))  # the last shard's line lost
    _shard(folder, 30).unlink()
    refused(lambda: _samples(db), "30", "40")


# -- Parquet parameter tables ------------------------------------------------------------------------------

def test_a_parquet_bomb_table_is_refused_from_its_footer(tmp_path):
    path = tmp_path / "bomb.parquet"
    batch = pa.table({"key": pa.array(["ADD64rr"] * 2**20).dictionary_encode(),
                      **{c: pa.array(np.ones(2**20, dtype=np.int64)) for c in ("uops", "latency")}})
    with pq.ParquetWriter(path, batch.schema, compression="zstd") as writer:
        for _ in range(-(-BOMB_ROWS // 2**20)):
            writer.write_table(batch)
    started = time.perf_counter()
    refused(lambda: load(path), "bomb.parquet", "rows")
    assert time.perf_counter() - started < 2


def test_the_cli_refuses_an_absurd_table_in_one_line(tmp_path, db_path):
    good = ParamTable(4, 192, units=(("P0", 1),), groups=(), rows={"ADD64rr": OpParams(1, 1)})
    good.save(tmp_path / "good.json")
    document = good.to_document()
    document["rows"]["ADD64rr"]["latency"] = 2**62
    (tmp_path / "bad.json").write_text(json.dumps(document))
    result = run_cli("difftune", "table", "diff", str(tmp_path / "good.json"), str(tmp_path / "bad.json"), db=db_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert all(n in result.stderr for n in ("bad.json", "ADD64rr", "latency")), result.stderr
