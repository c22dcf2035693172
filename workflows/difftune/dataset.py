"""DiffTune's simulated data set as a use case: choose the blocks and the arch's resource model, record the
data set in the store, simulate the missing samples in parallel and write each finished range as a shard
beside the database, recording progress after each, so that a rerun of the same name continues.

A rerun takes the blocks and model stored with the data set (not a fresh selection), so its rows stay those
of one fixed set of blocks whatever has been measured or decoded since.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.errors import UserError, brief
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.dataset import (
    MAX_SAMPLES,
    MAX_SHARD_ROWS,
    MAX_SHARDS,
    Job,
    check_scheduler,
    chunks,
    prepare_folder,
    run,
    write_shard,
)
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.params import from_document
from storage import Store
from storage.difftune import block_measurements
from storage.difftune.datasets import create_dataset, dataset, update_dataset
from workflows.difftune import decoded_blocks, table_cache, this_cpu

#: done, wanted (samples of the data set, stored ones included)
Progress = Callable[[int, int], None]
SOURCES = ("anchor", "measured")
CHUNK = 5000
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> None:
    """Refuse a data set or surrogate name that cannot be a folder name (both live in folders beside the database)."""
    if not _NAME.fullmatch(name):
        raise UserError(f"name: letters, digits, '.', '_' and '-' (a folder name), got {brief(name)}")


@dataclass(frozen=True)
class SimulatedDataset:
    """What one ``simulate_dataset`` call did."""

    name: str
    arch: str
    blocks: int
    folder: str
    samples_done: int
    samples_wanted: int
    simulated: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dataset_folder(store: Store, name: str) -> Path:
    """``<database>.difftune/<name>``: the shards travel with the database."""
    return Path(store.path).parent / f"{Path(store.path).name}.difftune" / name


def _blocks(store: Store, hexes: list[str]) -> list[Block | str]:
    """Each block decoded (or why not), in the order of ``hexes``: a row's block index depends on it."""
    found = decoded_blocks(store, hexes)
    return [found[h] for h in dict.fromkeys(hexes)]


def _new_job(store: Store, arch: str, source: str, limit: int | None) -> Job:
    if source == "anchor":
        hexes = list(bhive.anchor()["hex"])
    else:
        rows = block_measurements(store, this_cpu(store)[0], 1)
        hexes = list(rows.loc[rows["status"] == "ok", "hex"])
    blocks = [b for b in _blocks(store, hexes[:limit] if limit else hexes) if isinstance(b, Block)]
    if not blocks:
        raise UserError(f"blocks: no decoded {source} blocks (for measured ones, run tunelab blocks measure first)")
    return Job(tuple(blocks), default_table(blocks, arch, table_cache()))


def stored_job(store: Store, row: dict[str, Any]) -> Job:
    blocks = _blocks(store, row["blocks"])
    lost = [b for b in blocks if not isinstance(b, Block)]
    if lost:
        raise UserError(f"name: data set {brief(row['name'])} has a block that no longer decodes: {brief(lost[0])}")
    return Job(tuple(b for b in blocks if isinstance(b, Block)), from_document(row["model"]))


def simulate_dataset(store: Store, *, arch: str, samples: int, source: str = "anchor", name: str | None = None,
                     limit: int | None = None, workers: int = 1, scheduler: str | None = None, chunk: int = CHUNK,
                     progress: Progress | None = None) -> SimulatedDataset:
    """Simulate samples until the data set ``name`` (default ``<arch>-<source>``) holds ``samples`` of them,
    creating it on first use (``limit``: the first blocks of the source only)."""
    started = time.monotonic()
    name = name or f"{arch}-{source}"
    for field, value, most in (("samples", samples, MAX_SAMPLES), ("workers", workers, None),
                               ("chunk", chunk, MAX_SHARD_ROWS)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{field}: must be a positive integer, got {brief(value)}")
        if most is not None and value > most:
            raise UserError(f"{field}: at most {most:,} (what a data set loads back), got {value:,}")
    if source not in SOURCES:
        raise UserError(f"blocks: expected one of {', '.join(SOURCES)}, got {brief(source)}")
    check_name(name)
    if scheduler is not None:
        check_scheduler(scheduler)
        if workers != 1:
            raise UserError(f"workers: {workers} local workers and a Dask scheduler ({brief(scheduler)}); choose one")
    row = dataset(store, name)
    if row is None:
        job, folder, done = _new_job(store, arch, source, limit), dataset_folder(store, name), 0
    elif row["arch"] != arch:
        raise UserError(f"arch: data set {brief(name)} is for {brief(row['arch'])}, got {brief(arch)}")
    else:
        job, folder, done = stored_job(store, row), Path(store.path).parent / row["folder"], int(row["samples_done"])
    ranges = chunks(done, samples, chunk)
    shards = prepare_folder(folder, len(job.blocks), done) + len(ranges)
    if shards > MAX_SHARDS:
        raise UserError(f"chunk: {samples:,} samples in chunks of {chunk:,} make {shards:,} shards, more than "
                        f"{MAX_SHARDS:,}; choose a larger chunk")
    if row is None:
        create_dataset(store, name=name, arch=arch, blocks=[b.hex for b in job.blocks], model=job.model.to_document(),
                       folder=str(folder.relative_to(Path(store.path).parent)), samples_wanted=samples)
    else:
        update_dataset(store, name, samples_wanted=samples)
    first = done
    if progress:
        progress(done, samples)
    with closing(run(job, ranges, workers, scheduler)) as frames:
        for (start, stop), frame in zip(ranges, frames, strict=True):
            write_shard(folder, start, frame)
            done = stop
            update_dataset(store, name, samples_done=done)
            if progress:
                progress(done, samples)
    return SimulatedDataset(name, arch, len(job.blocks), str(folder), done, samples, done - first, time.monotonic() - started)
