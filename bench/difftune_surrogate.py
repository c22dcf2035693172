"""DiffTune's surrogate at CPU size: a simulated data set built in memory (anchor blocks × §3 random tables,
our numba simulator), training within a time budget, and the test MAPE on held-out blocks × random θ.

Usage: python bench/difftune_surrogate.py [--seeds 100] [--minutes 20] [--hidden 64] [--layers 2]
           [--folder .cache/difftune/surrogate_bench] [--limit N] [--cache .cache/difftune]
A folder holding a checkpoint of the same configuration is resumed (delete it to start over).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from engine.surrogates._torch import torch
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate
from engine.surrogates.difftune.train import Samples, TrainConfig, evaluate, split_blocks, train

THREADS = 2


def _simulate_chunk(job: tuple[list[Block], list[int], ParamTable, int]) -> list[tuple[int, int, int]]:
    blocks, indices, model, seeds = job
    out = []
    for block, index in zip(blocks, indices):
        keys = {i.key for i in block.instructions}
        for s in range(seeds):
            seed = index * seeds + s
            out.append((index, seed, int(simulate([block], sample_table(keys, model, seed))[0])))
    return out


def build(blocks: list[Block], model: ParamTable, seeds: int) -> pd.DataFrame:
    """``seeds`` random tables per block (distinct seeds across blocks), simulated on ``THREADS`` processes."""
    jobs = [(blocks[i::THREADS * 8], list(range(i, len(blocks), THREADS * 8)), model, seeds) for i in range(THREADS * 8)]
    with ProcessPoolExecutor(THREADS) as pool:
        rows = [r for chunk in pool.map(_simulate_chunk, jobs) for r in chunk]
    return pd.DataFrame(rows, columns=["block", "seed", "cycles"]).sort_values(["block", "seed"], ignore_index=True)


def _cpu() -> str:
    with open("/proc/cpuinfo") as handle:
        names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
    return f"{names[0]} × {len(names)}" if names else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="random tables per block")
    parser.add_argument("--minutes", type=float, default=20.0, help="training budget")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="first N anchor blocks only")
    parser.add_argument("--folder", default=".cache/difftune/surrogate_bench")
    parser.add_argument("--cache", default=".cache/difftune")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    frame = bhive.anchor()
    decoded = decode_blocks(list(frame["hex"].head(args.limit) if args.limit else frame["hex"]))
    blocks = [b for b in decoded if isinstance(b, Block)]
    model = default_table(blocks, "haswell", args.cache)
    start = time.perf_counter()
    data = build(blocks, model, args.seeds)
    built = time.perf_counter() - start
    print(f"CPU {_cpu()}; torch threads {torch.get_num_threads()}")
    print(f"data: {len(blocks)} blocks × {args.seeds} tables = {len(data):,} samples in {built:.0f} s "
          f"({len(data) / built:,.0f} samples/s on {THREADS} processes); cycles median {data['cycles'].median():.0f}")
    samples = Samples(data, blocks, model)
    train_b, val_b, test_b = split_blocks(len(blocks))
    config = TrainConfig(embedding=args.hidden, hidden=args.hidden, layers=args.layers)
    start = time.perf_counter()
    surrogate, history = train(samples, args.folder, epochs=1000, config=config, max_seconds=60 * args.minutes)
    trained = time.perf_counter() - start
    epochs = history.groupby("epoch")["seconds"].max()
    for row in history.dropna(subset=["val_mape"]).to_dict("records"):
        print(f"  epoch {row['epoch']:.0f}: step {row['step']:.0f}, EMA loss {row['ema']:.4f}, val MAPE {row['val_mape']:.2%}")
    test = samples.restrict(test_b)
    test_mape = evaluate(surrogate, test)
    n_train = int(data["block"].isin(train_b).sum())
    print(f"train {n_train:,} samples ({len(train_b)} blocks), val {len(val_b)} blocks, test {len(test.frame):,} samples "
          f"({len(test_b)} blocks); hidden {args.hidden}, {args.layers} layers, "
          f"{sum(p.numel() for p in surrogate.network.parameters()):,} weights")
    print(f"epochs {len(epochs)}, {np.mean(epochs):.0f} s per epoch, {trained:.0f} s in this run (with encoding)")
    print(f"TEST MAPE (held-out blocks × random θ): {test_mape:.2%}  (goal ≤ 10%)")


if __name__ == "__main__":
    main()
