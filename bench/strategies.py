"""Bench: the paper's strategy comparison on the GPU Laplacian table, next to the paper's figures.

Runs RS, LHS, GS, GSR, GA, LM and DLMT (1000 repetitions, budget 125, the paper preset) on
``laplacian/search_space.csv`` exactly as ``tunelab bench`` does, prints our table beside the
paper's (docs/dlmt.md §4.5) with ratios, the wall time against the 10-minute target, and then
DLMT, BO, RS and GA side by side on the Kernel Tuner convolution cache (100 repetitions, budget 60).

    .venv/bin/python bench/strategies.py [--reps 1000] [--kt-reps 100] [--jobs 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time

from engine.compare.presets import preset
from engine.compare.replay import load_table
from engine.compare.run import run_benchmark
from engine.compare.summary import summary_table, with_paper
from engine.io.paths import data_dir

LAPLACIAN = ["RS", "LHS", "GS", "GSR", "GA", "LM", "DLMT"]
KT = ["DLMT", "BO", "RS", "GA"]
TARGET_S = 600.0


def _run(table, names, reps, budget, jobs, seed):
    options, budgets = preset("paper", table.space)
    started = time.perf_counter()

    def progress(n, total, name):
        print(f"\r  {n}/{total} runs ({name})", end="", file=sys.stderr, flush=True)

    comparison = run_benchmark(table, names, reps=reps, budget=budget, jobs=jobs, seed=seed, options=options,
                               budgets=budgets, progress=progress)
    print(file=sys.stderr)
    return comparison, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--kt-reps", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = data_dir()
    if data is None:
        print("shared data folder is absent", file=sys.stderr)
        return 1
    fmt = {"float_format": lambda v: f"{v:.4f}"}

    table = load_table(data / "laplacian" / "search_space.csv", "time_per_pixel")
    comparison, seconds = _run(table, LAPLACIAN, args.reps, 125, args.jobs, args.seed)
    print(f"GPU Laplacian, {args.reps} repetitions, budget 125 (paper preset), seed {args.seed}")
    print(with_paper(summary_table(comparison)).to_string(index=False, **fmt))
    print(f"wall time {seconds:.1f} s on {args.jobs} processes (target < {TARGET_S:.0f} s: ratio {seconds / TARGET_S:.2f})")

    kt = load_table(data / "kernel_tuner" / "convolution_milo_A4000.json.gz")
    comparison, seconds = _run(kt, KT, args.kt_reps, 60, args.jobs, args.seed)
    print(f"\nKernel Tuner convolution (RTX A4000), {args.kt_reps} repetitions, budget 60, seed {args.seed}")
    print(summary_table(comparison).to_string(index=False, **fmt))
    print(f"wall time {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
