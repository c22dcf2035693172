"""``tunelab difftune dataset``: DiffTune's simulated data set (random tables, the simulator's cycles), resumable."""

from __future__ import annotations

import argparse
import sys

from app.cli._common import MAX_COUNT, MAX_WORKERS, add_json, bounded, open_store
from app.cli._output import emit

#: engine.surrogates.difftune.dataset's MAX_SAMPLES and MAX_SHARD_ROWS (the most a data set loads back), spelt
#: out: importing them would load numba at every start-up; tests/test_difftune_dataset.py keeps them in step.
MAX_SAMPLES = 100_000_000
MAX_CHUNK = 1_000_000


def register_dataset(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = actions.add_parser("dataset", help="simulate random parameter tables on blocks (DiffTune's training data); "
                                           "a rerun of the same name continues")
    p.add_argument("--arch", required=True, help="llvm-mca -mcpu whose resource model the random tables use")
    p.add_argument("--samples", type=int, required=True, action=bounded(1, MAX_SAMPLES),
                   help="samples the data set should hold (those stored count)")
    p.add_argument("--blocks", choices=("anchor", "measured"), default="anchor",
                   help="anchor: the 2,000-block sample; measured: this CPU's measured blocks")
    p.add_argument("--limit", type=int, action=bounded(1, 10 * MAX_COUNT), help="the first this many blocks only")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=1, action=bounded(1, MAX_WORKERS), help="local worker processes")
    where.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786")
    p.add_argument("--chunk", type=int, default=5000, action=bounded(1, MAX_CHUNK),
                   help="samples per task and per shard")
    p.add_argument("--name", help="data set name (default: ARCH-BLOCKS)")
    add_json(p)
    p.set_defaults(func=_dataset)


def _dataset(args: argparse.Namespace) -> int:
    from workflows.difftune.dataset import simulate_dataset

    def progress(done: int, wanted: int) -> None:
        width = 30
        filled = width * done // max(wanted, 1)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{wanted:,} samples", end="", file=sys.stderr, flush=True)

    shown = not args.json and sys.stderr.isatty()
    with open_store(args) as store:
        result = simulate_dataset(store, arch=args.arch, samples=args.samples, source=args.blocks, name=args.name,
                                  limit=args.limit, workers=args.workers, scheduler=args.scheduler, chunk=args.chunk,
                                  progress=progress if shown else None)
    if shown:
        print(file=sys.stderr)
    rate = result.simulated / result.seconds if result.seconds > 0 else 0.0
    emit(result.to_dict(), args.json,
         f"data set '{result.name}' ({result.arch}, {result.blocks:,} blocks): {result.samples_done:,} of "
         f"{result.samples_wanted:,} samples, {result.simulated:,} simulated now in {result.seconds:.1f} s "
         f"({rate:,.0f} samples/s); shards in {result.folder}")
    return 0
