"""DiffTune's simulated data set: reproducible (the seed redraws the table, the simulator gives the row's
cycles), resumable without duplicates, the same rows in parallel as in series, the store row matching the
shards, and one-line refusals. Ten anchor blocks, 200 samples: a few seconds."""

from __future__ import annotations

import numpy as np
import pytest

from app.cli.difftune import dataset as cli
from engine.errors import UserError
from engine.surrogates.difftune import dataset as dataset_module
from engine.surrogates.difftune.dataset import assignment, load_dataset, write_shard
from engine.surrogates.difftune.params import from_document
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate
from storage import Store
from storage.difftune.datasets import dataset
from tests.conftest import run_cli
from workflows.difftune import decoded_blocks
from workflows.difftune.dataset import dataset_folder, simulate_dataset

# Starts Dask clusters: after make test's parallel phase, alone (spawned workers hung inside a test worker).
pytestmark = pytest.mark.serial

BLOCKS, SAMPLES, CHUNK = 10, 200, 50


def _make(store, name, **options):
    kwargs = {"arch": "haswell", "samples": SAMPLES, "name": name, "limit": BLOCKS, "chunk": CHUNK, **options}
    return simulate_dataset(store, **kwargs)


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """One uninterrupted serial data set, its store row and its rows."""
    with Store(tmp_path_factory.mktemp("reference") / "tunelab.duckdb") as store:
        _make(store, "ref")
        row = dataset(store, "ref")
        return row, load_dataset(dataset_folder(store, "ref"))


def test_blocks_are_dealt_in_rounds_and_any_range_is_computed_alone():
    blocks, seeds = assignment(7, 0, 70)
    assert seeds.tolist() == list(range(70)) and blocks.dtype == np.int32
    assert all(sorted(blocks[r * 7:(r + 1) * 7]) == list(range(7)) for r in range(10))
    part_blocks, part_seeds = assignment(7, 12, 40)
    assert part_blocks.tolist() == blocks[12:40].tolist() and part_seeds.tolist() == list(range(12, 40))


def test_each_row_is_its_seeds_table_simulated_and_a_rerun_gives_the_same_rows(reference, db_path):
    row, rows = reference
    model = from_document(row["model"])
    with Store(db_path) as store:
        decoded_blocks(store, row["blocks"][:4:-1])  # some cached already, in another order: the rows stay the same
        _make(store, "again")
        again = load_dataset(dataset_folder(store, "again"))
        blocks = [decoded_blocks(store, [h])[h] for h in row["blocks"]]
    assert again.equals(rows)
    assert rows["seed"].tolist() == list(range(SAMPLES)) and rows["block"].value_counts().eq(SAMPLES // BLOCKS).all()
    for b, seed, cycles in rows.itertuples(index=False):
        block = blocks[b]
        table = sample_table([i.key for i in block.instructions], model, int(seed))
        assert simulate([block], table)[0] == cycles


def test_the_store_row_and_the_shards_agree(reference, db_path):
    row, rows = reference
    assert (row["arch"], row["samples_done"], row["samples_wanted"]) == ("haswell", SAMPLES, SAMPLES)
    assert len(row["blocks"]) == BLOCKS and rows["block"].between(0, BLOCKS - 1).all()
    assert row["folder"] == "tunelab.duckdb.difftune/ref" and len(rows) == row["samples_done"]
    assert from_document(row["model"]).provenance["mcpu"] == "haswell"


class _Stop(Exception):
    pass


def test_an_interrupted_run_resumes_without_duplicates(reference, db_path):
    def stop_after_first_chunk(done, wanted):
        if done >= CHUNK:
            raise _Stop

    with Store(db_path) as store:
        with pytest.raises(_Stop):
            _make(store, "cut", workers=2, progress=stop_after_first_chunk)
        assert dataset(store, "cut")["samples_done"] == CHUNK
        folder = dataset_folder(store, "cut")
        write_shard(folder, CHUNK, reference[1].iloc[CHUNK:CHUNK + 10])  # written, never recorded: discarded
        resumed = _make(store, "cut")
        assert (resumed.samples_done, resumed.simulated) == (SAMPLES, SAMPLES - CHUNK)
        assert load_dataset(folder).equals(reference[1])
        more = _make(store, "cut", samples=SAMPLES + 30, chunk=20)
        assert more.simulated == 30 and load_dataset(folder)["seed"].tolist() == list(range(SAMPLES + 30))


def test_parallel_gives_the_serial_rows(reference, db_path):
    with Store(db_path) as store:
        _make(store, "pool", workers=2)
        assert load_dataset(dataset_folder(store, "pool")).equals(reference[1])


def test_a_dask_cluster_gives_the_serial_rows(reference, db_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                   dashboard_address=None) as cluster:
        with Store(db_path) as store:
            _make(store, "dask", scheduler=cluster.scheduler_address)
            assert load_dataset(dataset_folder(store, "dask")).equals(reference[1])


def _stop(done, wanted):
    raise _Stop


def test_bad_input_is_one_line_naming_the_field(reference, db_path):
    with Store(db_path) as store:
        for name, options, field in (("../x", {}, "name:"), ("bad", {"samples": 0}, "samples:"),
                                     ("bad", {"source": "all"}, "blocks:"), ("bad", {"scheduler": "a b"}, "scheduler:"),
                                     ("bad", {"workers": 2, "scheduler": "tcp://h:1"}, "workers:"),
                                     ("big", {"samples": dataset_module.MAX_SAMPLES + 1}, "samples:"),
                                     ("big", {"chunk": dataset_module.MAX_SHARD_ROWS + 1}, "chunk:"),
                                     ("big", {"samples": dataset_module.MAX_SHARDS + 1, "chunk": 1}, "chunk:")):
            with pytest.raises(UserError, match=field):  # before anything is simulated (_stop) or recorded
                _make(store, name, progress=_stop, **options)
            assert dataset(store, name) is None
        _make(store, "t", samples=20)
    other = run_cli("difftune", "dataset", "--arch", "skylake", "--samples", "20", "--name", "t", db=db_path)
    zero = run_cli("difftune", "dataset", "--arch", "haswell", "--samples", "0", db=db_path)
    for result, text in ((other, "arch: data set 't' is for 'haswell'"), (zero, "--samples 0: must be from 1")):
        assert result.returncode == 2 and text in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_command_lines_bounds_are_what_a_data_set_loads_back():
    assert (cli.MAX_SAMPLES, cli.MAX_CHUNK) == (dataset_module.MAX_SAMPLES, dataset_module.MAX_SHARD_ROWS)
