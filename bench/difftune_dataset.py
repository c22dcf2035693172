"""Throughput of DiffTune's simulated data set on the anchor blocks: the whole use case (random tables, the
simulator, shards, progress in a fresh database), so the figure is what ``tunelab difftune dataset`` gets.

Usage: python bench/difftune_dataset.py [--samples N] [--workers W] [--arch haswell] [--chunk C] [--keep DIR]
Prints samples/s and the time 2,000,000 samples (DiffTune-scale) would take at that rate.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from engine.surrogates.difftune.dataset import load_dataset
from engine.surrogates.difftune.measure import cpu_identity
from storage import Store
from workflows.difftune.dataset import CHUNK, dataset_folder, simulate_dataset

TARGET = 2_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--arch", default="haswell")
    parser.add_argument("--chunk", type=int, default=CHUNK)
    parser.add_argument("--keep", help="folder for the database and shards (default: a temporary one, removed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(args.keep or scratch) / "bench.duckdb"
        with Store(db) as store:
            simulate_dataset(store, arch=args.arch, samples=1, name="warm-up")  # decode and build the table first
            start = time.perf_counter()
            done = simulate_dataset(store, arch=args.arch, samples=args.samples, name="bench", workers=args.workers,
                                    chunk=args.chunk)
            seconds = time.perf_counter() - start
            folder = dataset_folder(store, "bench")
            rows = len(load_dataset(folder))
            size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    rate = done.simulated / seconds
    print(f"CPU {cpu_identity().model_name}; {done.blocks:,} anchor blocks, -mcpu={args.arch}, {args.workers} workers, "
          f"chunks of {args.chunk:,}")
    print(f"{done.simulated:,} samples in {seconds:.1f} s (pool start included): {rate:,.0f} samples/s; {rows:,} rows "
          f"in {size / 1e6:.1f} MB of shards ({size / max(rows, 1):.1f} bytes/row)")
    print(f"projected for {TARGET:,} samples: {TARGET / rate / 60:.1f} min")


if __name__ == "__main__":
    main()
