"""GPU runners on a CUDA device: cuBLAS (torch.matmul) against every Triton matmul configuration of a
small grid, then the strategies replayed on that measured table.

Part 1 (needs CUDA and triton): time torch.matmul and each Triton block/warp/stage configuration on
one fp16 problem with :class:`engine.runners.torch_runner.TorchRunner` (CUDA events, ``inner`` calls
per repeat, median of ``repeats``), check the fastest Triton configuration against float64, and
write the grid as a CSV table (``--out``). Part 2 (any machine): ``--replay FILE`` runs RS, GA, BO
and DLMT on that table with a small budget, the offline benchmark a person would run before
spending GPU time. Ratios: cuBLAS time / Triton time (above 1: Triton is faster), and slowdowns
against the grid's optimum.

    python bench/gpu.py --out gpu_triton.csv          # on the GPU machine
    python bench/gpu.py --replay gpu_triton.csv       # anywhere
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import pandas as pd

GRID = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "num_warps": [4, 8],
        "num_stages": [2, 3, 4]}


def measure_grid(size: int, repeats: int, inner: int) -> tuple[pd.DataFrame, float, str]:
    """Every grid configuration's median seconds (NaN where it failed), cuBLAS's, and the device."""
    from engine.runners.torch_runner import TorchRunner

    common = {"device": "cuda", "size": size, "dtype": "float16", "repeats": repeats, "warmup": 2, "inner": inner}
    cublas = TorchRunner("matmul", **common).measure({})
    device = cublas[0].metadata.get("device", "?")
    cublas_s = statistics.median(r.value for r in cublas if r.ok)
    triton = TorchRunner("triton_matmul", check=False, **common)
    rows = []
    for values in itertools.product(*GRID.values()):
        config = dict(zip(GRID, values))
        began = time.perf_counter()
        results = triton.measure(config)
        ok = [r.value for r in results if r.ok]
        rows.append({**config, "seconds": statistics.median(ok) if ok else float("nan"),
                     "status": results[0].status, "wall_s": time.perf_counter() - began})
    return pd.DataFrame(rows), cublas_s, device


def check_best(table: pd.DataFrame, size: int) -> float:
    from engine.runners.torch_runner import TorchRunner

    best = table.loc[table["seconds"].idxmin(), list(GRID)].astype(int).to_dict()
    result = TorchRunner("triton_matmul", device="cuda", size=size, dtype="float16", repeats=1).measure(best)[0]
    return float(result.metadata.get("rel_error", float("nan")))


def replay(path: str, budget: int, reps: int) -> None:
    from engine.compare.replay import load_table
    from engine.compare.run import run_benchmark
    from engine.compare.summary import summary_table

    table = load_table(path, "seconds")
    comparison = run_benchmark(table, ["RS", "GA", "BO", "DLMT"], reps=reps, budget=budget, jobs=2, seed=0)
    print(f"{len(table.domain.index)} measured configurations, budget {budget}, {reps} repetitions")
    print(summary_table(comparison).to_string(index=False))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the measured grid here (CSV)")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--replay", metavar="CSV", help="replay strategies on a measured grid")
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    if args.replay:
        replay(args.replay, args.budget, args.reps)
        return
    if not _cuda_available():
        print("no CUDA device here: skipped (run it on a GPU machine, or --replay a measured grid)")
        return
    began = time.perf_counter()
    table, cublas_s, device = measure_grid(args.size, args.repeats, args.inner)
    flops = 2 * args.size**3
    ok = table.dropna(subset=["seconds"])
    best, worst = ok["seconds"].min(), ok["seconds"].max()
    print(f"{device}, fp16 {args.size}^3, {len(table)} Triton configurations ({len(ok)} ran), "
          f"{time.perf_counter() - began:.0f} s")
    print(f"cuBLAS {cublas_s * 1e3:.3f} ms ({flops / cublas_s / 1e12:.0f} TFLOP/s)")
    print(f"Triton best {best * 1e3:.3f} ms ({flops / best / 1e12:.0f} TFLOP/s), cuBLAS/best = {cublas_s / best:.2f}; "
          f"worst {worst * 1e3:.3f} ms, worst/best = {worst / best:.2f}; median/best = {ok['seconds'].median() / best:.2f}")
    print("best configuration:", table.loc[table["seconds"].idxmin(), list(GRID)].astype(int).to_dict(),
          f"relative error vs float64 {check_best(table, args.size):.2e}")
    print(f"compile + measure per configuration: median {table['wall_s'].median():.2f} s")
    if args.out:
        ok[[*GRID, "seconds"]].to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
