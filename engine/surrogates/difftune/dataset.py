"""DiffTune's simulated data set (difftune.md §1, step 1): (block, seed, cycles) rows, where the seed alone
redraws the random table (§3) and cycles is the real simulator's count for 100 iterations under it.

Sample ``i`` has seed ``i``; blocks are dealt in rounds, each a permutation of all blocks seeded by the round
number. So any range of samples is fixed by the blocks alone: workers compute ranges independently, a rerun
reproduces every row and a stopped run resumes at its first missing sample. Rows are kept as Parquet shards
named by their first sample; the caller records how many samples are complete.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.execution.dask_executor import SCHEDULER_ADDRESS
from engine.execution.executors import process_context
from engine.execution.worker import die_with
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate

COLUMNS = {"block": "int32", "seed": "int64", "cycles": "int32"}
_SHARD = "part-{:010d}.parquet"


@dataclass(frozen=True)
class Job:
    """What every sample of one data set is drawn from: the blocks and the resource model of the tables."""

    blocks: tuple[Block, ...]
    model: ParamTable


def assignment(n_blocks: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Block indices (int32) and seeds (int64) of samples ``start`` .. ``stop - 1``."""
    seeds = np.arange(start, stop, dtype=np.int64)
    blocks = np.empty(len(seeds), dtype=np.int32)
    for round_ in range(start // n_blocks, -(-stop // n_blocks)):
        lo, hi = max(start, round_ * n_blocks), min(stop, (round_ + 1) * n_blocks)
        order = np.random.RandomState(round_).permutation(n_blocks)
        blocks[lo - start:hi - start] = order[lo - round_ * n_blocks:hi - round_ * n_blocks]
    return blocks, seeds


def simulate_samples(job: Job, start: int, stop: int) -> pd.DataFrame:
    """The rows of samples ``start`` .. ``stop - 1`` (what a worker runs)."""
    blocks, seeds = assignment(len(job.blocks), start, stop)
    keys = [[i.key for i in b.instructions] for b in job.blocks]
    cycles = np.array([simulate([job.blocks[b]], sample_table(keys[b], job.model, int(s)))[0]
                       for b, s in zip(blocks, seeds, strict=True)], dtype=np.int32)
    return pd.DataFrame({"block": blocks, "seed": seeds, "cycles": cycles})


def chunks(start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """``start`` .. ``stop`` cut into ranges of at most ``size`` samples."""
    return [(a, min(a + size, stop)) for a in range(start, stop, size)]


# -- running ranges in parallel ------------------------------------------------------------------------

_INSTALLED: Job | None = None


def _install(job: Job, owner: int) -> None:
    """Pool initializer: the job is shipped once per worker, which ends with its owner."""
    global _INSTALLED
    _INSTALLED = job
    die_with(owner)


def _simulate_installed(start: int, stop: int) -> pd.DataFrame:
    assert _INSTALLED is not None, "pool worker without a job"
    return simulate_samples(_INSTALLED, start, stop)


def _in_order(submit: Callable[[int, int], Any], ranges: Sequence[tuple[int, int]], depth: int) -> Iterator[pd.DataFrame]:
    """Results in the order of ``ranges``, at most ``depth`` submitted ahead (little is lost when stopped)."""
    todo = iter(ranges)
    pending = deque(submit(a, b) for a, b in islice(todo, depth))
    while pending:
        frame: pd.DataFrame = pending.popleft().result()
        pending.extend(submit(a, b) for a, b in islice(todo, 1))
        yield frame


def run(job: Job, ranges: Sequence[tuple[int, int]], workers: int = 1,
        scheduler: str | None = None) -> Generator[pd.DataFrame, None, None]:
    """Each range's rows, in order: in this process (one worker), a local process pool, or a Dask cluster."""
    if scheduler is not None:
        yield from _on_dask(job, ranges, scheduler)
    elif workers == 1:
        yield from (simulate_samples(job, a, b) for a, b in ranges)
    else:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=process_context(), initializer=_install,
                                   initargs=(job, os.getpid()))
        try:
            yield from _in_order(lambda a, b: pool.submit(_simulate_installed, a, b), ranges, 2 * workers)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def check_scheduler(address: str) -> None:
    """Refuse what cannot be a Dask scheduler's address before anything is recorded."""
    if not SCHEDULER_ADDRESS.match(address):
        raise UserError(f"scheduler: expected an address like tcp://HOST:8786, got {brief(address)}")


def _on_dask(job: Job, ranges: Sequence[tuple[int, int]], scheduler: str) -> Iterator[pd.DataFrame]:
    import distributed

    dask: Any = distributed  # untyped
    check_scheduler(scheduler)
    try:
        client = dask.Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise UserError(f"scheduler: cannot connect to {brief(scheduler)} ({str(exc).splitlines()[0][:200]})") from None
    try:
        shipped = client.scatter(job, broadcast=True, hash=False)
        slots = max(1, int(sum(client.nthreads().values())))
        yield from _in_order(lambda a, b: client.submit(simulate_samples, shipped, a, b, pure=False), ranges, 2 * slots)
    finally:
        client.close()


# -- shards --------------------------------------------------------------------------------------------

def write_shard(folder: Path, start: int, frame: pd.DataFrame) -> Path:
    """One range's rows as ``part-<first sample>.parquet``, written whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _SHARD.format(start)
    scratch = path.with_name(f".{path.name}.tmp")
    frame.astype(COLUMNS).to_parquet(scratch, index=False)
    os.replace(scratch, path)
    return path


def _shards(folder: Path) -> list[tuple[int, Path]]:
    return sorted((int(p.stem.removeprefix("part-")), p) for p in folder.glob("part-*.parquet"))


def discard_from(folder: Path, done: int) -> None:
    """Remove shards starting at or after sample ``done``: written by a run stopped before it recorded them."""
    for start, path in _shards(folder):
        if start >= done:
            path.unlink()


def load_dataset(folder: str | Path) -> pd.DataFrame:
    """Every row of a data set's shards, in sample order (columns ``block``, ``seed``, ``cycles``)."""
    frames = [pd.read_parquet(p) for _, p in _shards(Path(folder))]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})
    return pd.concat(frames, ignore_index=True).astype(COLUMNS)
