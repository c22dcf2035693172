"""DiffTune's simulated data set (difftune.md §1, step 1): (block, seed, cycles) rows, where the seed alone
redraws the random table (§3) and cycles is the real simulator's count for 100 iterations under it.

Sample ``i`` has seed ``i``; blocks are dealt in rounds, each a permutation of all blocks seeded by the round
number. So any range of samples is fixed by the blocks alone: workers compute ranges independently, a rerun
reproduces every row and a stopped run resumes at its first missing sample. Rows are kept as Parquet shards
named by their first sample, listed in the folder's manifest (what the folder holds: nothing else is read);
the caller records how many samples are complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.errors import UserError, brief
from engine.execution.dask_executor import SCHEDULER_ADDRESS
from engine.execution.executors import process_context
from engine.execution.worker import die_with
from engine.io.table_import import MAX_IMPORT_BYTES, read_bytes, source_name
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable, check_file, json_object, open_parquet, read_parquet
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
#
# A folder's manifest (JSON lines) is what the folder holds: a head line, then one line per shard, appended
# after the shard is written to a scratch name and before it takes its own, so a stopped run leaves only
# listed shards (or a cut last line) behind. Nothing the manifest does not list is read; what it lists is
# checked for its size, hash, footer, columns and values before it is used.

#: Most samples a data set may hold: 50x DiffTune's 2 M, 1.6 GB of rows once loaded.
MAX_SAMPLES = 100_000_000
#: Most rows a shard may hold (the chunk): 200x the default chunk, 16 MB of rows.
MAX_SHARD_ROWS = 1_000_000
#: Most shards a data set may hold: each is a file, opened and hashed whenever the data set is loaded.
MAX_SHARDS = 100_000
MANIFEST = "manifest.jsonl"
_HEAD = {"tunelab": "difftune data set", "version": 1}
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SCHEMA = pa.schema([(c, pa.from_numpy_dtype(np.dtype(t))) for c, t in COLUMNS.items()])


@dataclass(frozen=True)
class Shard:
    """One manifest line: the file of samples ``start`` .. ``start + rows - 1``, its size and content hash."""

    file: str
    start: int
    rows: int
    bytes: int
    sha256: str

    @property
    def stop(self) -> int:
        return self.start + self.rows


def _label(folder: Path) -> str:
    return f"data set {source_name(folder)}"


def _shard_line(text: str, what: str, start: int) -> Shard:
    """A manifest line, which must list the shard of samples from ``start`` (the previous one's stop)."""
    data = json_object(text, what)
    names = [f.name for f in fields(Shard)]
    if sorted(data) != sorted(names):
        raise UserError(f"{what}: expected a shard's {', '.join(names)}, got {brief(data)}")
    shard = Shard(**data)
    for name, low, high in (("start", start, start), ("rows", 1, MAX_SHARD_ROWS), ("bytes", 1, MAX_IMPORT_BYTES)):
        value = getattr(shard, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UserError(f"{what}: {name} must be from {low:,} to {high:,}, got {brief(value)}")
    if shard.file != _SHARD.format(start) or shard.stop > MAX_SAMPLES:
        raise UserError(f"{what}: expected {_SHARD.format(start)} ending by sample {MAX_SAMPLES:,}, got {brief(data)}")
    if not isinstance(shard.sha256, str) or not _SHA256.fullmatch(shard.sha256):
        raise UserError(f"{what}: sha256 must be 64 hex digits, got {brief(shard.sha256)}")
    return shard


def _read_manifest(folder: Path) -> tuple[int, list[Shard]] | None:
    """The folder's block count and listed shards, None when it has no manifest; a damaged one is one line."""
    what = f"{_label(folder)}: {MANIFEST}"
    if not (folder / MANIFEST).exists():
        return None
    check_file(folder / MANIFEST, what)
    try:
        text = read_bytes(folder / MANIFEST, what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what}: not UTF-8 text (byte {exc.start})") from None
    lines = text.split("\n")[:-1]  # the last piece lacks its newline: an append cut short, never a shard
    if len(lines) > 1 + MAX_SHARDS:
        raise UserError(f"{what}: {len(lines) - 1:,} shards, more than a data set may hold ({MAX_SHARDS:,})")
    head = json_object(lines[0], f"{what}: line 1") if lines else {}
    blocks = head.get("blocks")
    if {k: v for k, v in head.items() if k != "blocks"} != _HEAD or isinstance(blocks, bool) \
            or not isinstance(blocks, int) or blocks < 1:
        raise UserError(f"{what}: line 1 is not a tunelab data set's head, got {brief(head)}")
    shards: list[Shard] = []
    for number, line in enumerate(lines[1:], start=2):
        shards.append(_shard_line(line, f"{what}: line {number}", shards[-1].stop if shards else 0))
    return blocks, shards


def _contents(folder: Path, done: int) -> tuple[int | None, list[Shard]]:
    """The folder's block count (None without a manifest) and listed shards. Refused: Parquet files the
    manifest does not list (they would never be read: not what was simulated) and fewer than ``done`` samples."""
    manifest = _read_manifest(folder) if folder.is_dir() else None
    blocks, shards = manifest or (None, [])
    listed = {s.file for s in shards}
    extra = sorted(p.name for p in folder.iterdir() if p.name.endswith(".parquet") and p.name not in listed) \
        if folder.is_dir() else []
    if extra and manifest is None:
        raise UserError(f"{_label(folder)}: no {MANIFEST}, so {brief(extra[0])} and the other shards cannot be "
                        "checked (simulated by an older tunelab?); simulate the data set again under another name")
    if extra:
        raise UserError(f"{_label(folder)}: {brief(extra[0])} is not one of its shards ({MANIFEST} lists "
                        f"{len(listed):,}); move it out of the folder")
    held = shards[-1].stop if shards else 0
    if held < done:
        raise UserError(f"{_label(folder)}: its shards hold {held:,} samples, the store records {done:,} done")
    return blocks, shards


def _check_blocks(folder: Path, listed: int | None, blocks: int) -> None:
    if listed is not None and listed != blocks:
        raise UserError(f"{_label(folder)}: its samples are of {listed:,} blocks, the store lists {blocks:,}")


def prepare_folder(folder: Path, blocks: int, done: int) -> int:
    """Make ``folder`` hold the shards of samples ``0 .. done - 1`` and nothing after them (shards a run wrote
    but did not record, scratch files) before a run adds to it; returns how many shards it keeps. A folder
    with Parquet files it does not list, shards missing or changed, fewer than ``done`` samples or samples of
    another block list is refused, untouched."""
    folder.mkdir(parents=True, exist_ok=True)
    listed, shards = _contents(folder, done)
    if done:
        _check_blocks(folder, listed, blocks)
    kept = [s for s in shards if s.stop <= done]
    if (kept[-1].stop if kept else 0) != done:
        raise UserError(f"{_label(folder)}: the store records {done:,} samples done, inside a shard")
    for shard in kept:  # a damaged data set is refused now, not after the run has added to it
        _check_written(folder, shard)
    for shard in shards[len(kept):]:
        (folder / shard.file).unlink(missing_ok=True)
    for scratch in folder.glob(".part-*.tmp"):
        scratch.unlink()
    scratch = folder / f".{MANIFEST}.tmp"
    scratch.write_text("".join(json.dumps(x) + "\n" for x in [{**_HEAD, "blocks": blocks}, *map(asdict, kept)]))
    os.replace(scratch, folder / MANIFEST)
    return len(kept)


def write_shard(folder: Path, start: int, frame: pd.DataFrame) -> Path:
    """One range's rows as ``part-<first sample>.parquet``, listed in the manifest of a folder
    :func:`prepare_folder` prepared (the range must follow the last one), written whole or not at all."""
    if not (folder / MANIFEST).is_file():
        raise UserError(f"{_label(folder)}: no {MANIFEST} (prepare_folder makes it)")
    path = folder / _SHARD.format(start)
    scratch = path.with_name(f".{path.name}.tmp")
    frame.astype(COLUMNS).to_parquet(scratch, index=False)
    with open(scratch, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    with open(folder / MANIFEST, "a") as manifest:
        manifest.write(json.dumps(asdict(Shard(path.name, start, len(frame), scratch.stat().st_size, digest))) + "\n")
    os.replace(scratch, path)
    return path


def _check_written(folder: Path, shard: Shard) -> None:
    """Refuse a listed shard that is missing or not the file written: its size, then its hash."""
    path, what = folder / shard.file, f"{_label(folder)}: {shard.file}"
    check_file(path, what)
    if path.stat().st_size != shard.bytes:
        raise UserError(f"{what}: {path.stat().st_size:,} bytes, {MANIFEST} lists {shard.bytes:,} (replaced or cut?)")
    with open(path, "rb") as handle:
        if hashlib.file_digest(handle, "sha256").hexdigest() != shard.sha256:
            raise UserError(f"{what}: not the file that was written (its sha256 is not the one {MANIFEST} lists)")


def _read_shard(folder: Path, shard: Shard, blocks: int) -> pd.DataFrame:
    """A listed shard, checked for its size and hash, then its footer, then its columns and values."""
    path, what = folder / shard.file, f"{_label(folder)}: {shard.file}"
    _check_written(folder, shard)
    with open_parquet(path, what, MAX_SHARD_ROWS) as file:
        schema = file.schema_arrow.remove_metadata()
        if file.metadata.num_rows != shard.rows or not schema.equals(_SCHEMA):
            raise UserError(f"{what}: {file.metadata.num_rows:,} rows of {brief(str(schema))}, expected "
                            f"{shard.rows:,} rows of {brief(str(_SCHEMA))}")
        table = read_parquet(file, what)
    if any(table.column(c).null_count for c in COLUMNS):
        raise UserError(f"{what}: a value is missing")
    frame = pd.DataFrame({c: table.column(c).to_numpy() for c in COLUMNS})
    for column, bad, wanted in (("seed", frame["seed"].to_numpy() != np.arange(shard.start, shard.stop), "its number"),
                                ("block", ~frame["block"].between(0, blocks - 1).to_numpy(), f"0 to {blocks - 1:,}"),
                                ("cycles", frame["cycles"].to_numpy() < 1, "at least 1")):
        if bad.any():
            row = int(np.argmax(bad))
            raise UserError(f"{what}: row {row + 1}: {column} {int(frame[column].iloc[row])}, expected {wanted}")
    return frame


def load_dataset(folder: str | Path, samples: int | None = None, blocks: int | None = None) -> pd.DataFrame:
    """The first ``samples`` rows of a data set (default: all its manifest lists), in sample order (columns
    ``block``, ``seed``, ``cycles``); ``blocks``: the length of the data set's block list. Only the shards the
    manifest lists are read, each checked first; a folder holding anything else is refused."""
    folder = Path(folder)
    listed, shards = _contents(folder, samples or 0)
    if blocks is not None:
        _check_blocks(folder, listed, blocks)
    wanted = (shards[-1].stop if shards else 0) if samples is None else samples
    frames = [_read_shard(folder, s, listed or 0) for s in shards if s.start < wanted]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})
    return pd.concat(frames, ignore_index=True).iloc[:wanted]
