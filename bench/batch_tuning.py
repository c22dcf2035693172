"""Batch tuning (issue 35 §1): what proposing k configurations at once costs in quality, and what it gains in time.

**Quality at equal measurements.** Each strategy runs on the shared Kernel Tuner caches with ``k`` measurements out
at once, replayed: every measurement takes a simulated time (log-normal, σ 0.3, drawn from the repetition's seed), the
earliest to finish is told first and the freed worker gets the strategy's next proposal at once (the asynchronous
loop of ``engine.execution.tuning.tune``). k = 1 is the sequential run. Per k: the geometric mean over the caches of
the mean slowdown at the budget, and its ratio to k = 1 with a 95% paired bootstrap interval (common random numbers:
repetition i of every k uses seed i). Goal: within 2% of k = 1 at k = 8.

**The constant liar, chosen held out.** ``--liars min,mean,max`` runs each liar at ``--select-k``; for each cache
held out, the liar with the lowest mean log slowdown over the other caches is chosen and its runs on the held-out
cache are reported ("held-out choice").

**Wall time.** ``--wall``: ``tunelab``'s own loop (``tune`` with a process pool of k workers, already started) on a
Python objective that sleeps 0.5 s per measurement, 64 measurements: efficiency = (64 × 0.5 s ÷ k) ÷ wall.
Goal: ≥ 0.8 at 8 workers, ≥ 0.7 at 16.

    .venv/bin/python bench/batch_tuning.py [--reps 10] [--budget 100] [--ks 1,4,8,16] [--strategies AUTO,TPE,BO]
                                           [--liars min,mean,max --select-k 8] [--wall --workers 1,2,4,8,16]
"""

from __future__ import annotations

import argparse
import heapq
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.compare.intervals import geo_mean_ratio_interval  # noqa: E402
from engine.compare.replay import BenchTable, load_table  # noqa: E402
from engine.io.paths import data_dir  # noqa: E402
from engine.strategies import base, make_strategy  # noqa: E402
from engine.surrogates.difftune.measure import cpu_identity  # noqa: E402

SPACES = ("convolution_milo_A4000", "convolution_milo_A6000", "dedispersion_milo_A6000", "gemm_RTX_3090", "pnpoly_RTX_3090")
#: Spread of the simulated measurement times (log-normal σ): measurements of one kernel differ by tens of percent.
SPREAD = 0.3


def replay(table: BenchTable, name: str, budget: int, k: int, seed: int, liar: str) -> float:
    """One run with ``k`` measurements out at once, results told in order of their simulated finish; the slowdown
    of the best configuration measured."""
    base.LIAR = liar
    strategy = make_strategy(name, table.domain, budget, seed=seed)
    strategy.parallel = k
    clock = np.random.default_rng(10_000 + seed)
    running: list[tuple[float, int, np.ndarray]] = []
    now, order = 0.0, 0
    while True:
        if len(running) < k and not strategy.finished:
            for row in strategy.ask_index(k - len(running)):
                heapq.heappush(running, (now + float(clock.lognormal(0.0, SPREAD)), order, row))
                order += 1
        if not running:
            break
        now, _, row = heapq.heappop(running)
        strategy.tell_index(row[None, :], *table.evaluate(row[None, :]))
    return float(table.slowdown(strategy.best_value)) if strategy.best_value is not None else float("inf")


def _job(args: tuple[str, str, int, int, int, str]) -> tuple[str, str, int, int, str, float]:
    space, name, budget, k, seed, liar = args
    table = _tables()[space]
    return space, name, k, seed, liar, replay(table, name, budget, k, seed, liar)


_CACHE: dict[str, BenchTable] = {}


def _tables() -> dict[str, BenchTable]:
    if not _CACHE:
        folder = data_dir()
        if folder is None:
            raise SystemExit("the shared data folder is absent (TUNELAB_DATA)")
        for space in SPACES:
            _CACHE[space] = load_table(folder / "kernel_tuner" / f"{space}.json.gz")
    return _CACHE


def quality(args: argparse.Namespace) -> None:
    ks = [int(k) for k in args.ks.split(",")]
    jobs = [(space, name, args.budget, k, seed, base.LIAR) for name in args.strategies.split(",") for k in ks
            for space in SPACES for seed in range(args.reps)]
    runs = _run_all(jobs, args.jobs)
    print(f"\nquality at budget {args.budget}, {args.reps} runs per cache, liar '{base.LIAR}' "
          f"(geo-mean over {len(SPACES)} caches of the mean slowdown; ÷ k = 1 with a 95% paired interval)")
    for name in args.strategies.split(","):
        one = {s: np.array([runs[(s, name, 1, r, base.LIAR)] for r in range(args.reps)]) for s in SPACES}
        for k in ks:
            at_k = {s: np.array([runs[(s, name, k, r, base.LIAR)] for r in range(args.reps)]) for s in SPACES}
            gm = geo_mean_ratio_interval(at_k)[0]
            ratio, low, high = geo_mean_ratio_interval(at_k, one, paired=True)
            per = " ".join(f"{s.split('_')[0][:5]}{s.split('_')[-1]} {at_k[s].mean():.3f}" for s in SPACES)
            print(f"  {name:5s} k={k:2d}: {gm:.4f}  ÷ k=1 {ratio:.4f} [{low:.4f}, {high:.4f}]   {per}")


def liars(args: argparse.Namespace) -> None:
    choices = args.liars.split(",")
    k = args.select_k
    jobs = [(space, name, args.budget, kk, seed, liar) for name in args.strategies.split(",") for liar in choices
            for kk in sorted({1, k}) for space in SPACES for seed in range(args.reps)]
    runs = _run_all(jobs, args.jobs)
    print(f"\nconstant liar at k = {k}, budget {args.budget}: held out by cache")
    for name in args.strategies.split(","):
        def arr(space: str, liar: str, kk: int) -> np.ndarray:
            return np.array([runs[(space, name, kk, r, liar)] for r in range(args.reps)])

        chosen: dict[str, np.ndarray] = {}
        for held in SPACES:
            score = {liar: float(np.mean([np.log(arr(s, liar, k)).mean() for s in SPACES if s != held])) for liar in choices}
            pick = min(score, key=score.__getitem__)
            chosen[held] = arr(held, pick, k)
            print(f"  {name}: held out {held}: chose '{pick}' ({', '.join(f'{c} {v:.4f}' for c, v in score.items())})")
        one = {s: arr(s, choices[0], 1) for s in SPACES}  # k = 1 makes no pick while another is out: no liar
        for liar in choices:
            ratio, low, high = geo_mean_ratio_interval({s: arr(s, liar, k) for s in SPACES}, one, paired=True)
            print(f"  {name} liar {liar:4s} at k={k}: ÷ k=1 {ratio:.4f} [{low:.4f}, {high:.4f}]")
        ratio, low, high = geo_mean_ratio_interval(chosen, one, paired=True)
        print(f"  {name} held-out choice at k={k}: ÷ k=1 {ratio:.4f} [{low:.4f}, {high:.4f}]")


def _run_all(jobs: list[tuple[str, str, int, int, int, str]], workers: int) -> dict[tuple[str, str, int, int, str], float]:
    started = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_job, jobs, chunksize=4))
    print(f"{len(jobs)} runs in {time.perf_counter() - started:.0f} s on {workers} processes")
    return {(s, n, k, r, liar): v for s, n, k, r, liar, v in results}


def wall(args: argparse.Namespace) -> None:
    """Each strategy and worker count in a fresh process (what a ``tunelab tune`` pays, imports included)."""
    print(f"\nwall: tune() on a warm process pool, {args.measurements} measurements of {args.sleep} s each, "
          "each run in a fresh process")
    for name in args.strategies.split(","):
        for workers in args.workers.split(","):
            done = subprocess.run([sys.executable, __file__, "--wall-one", name, workers, "--measurements",
                                   str(args.measurements), "--sleep", str(args.sleep)],
                                  capture_output=True, text=True, check=True, timeout=1200)
            print(done.stdout.strip().splitlines()[-1], flush=True)


def wall_one(name: str, workers: int, measurements: int, sleep: float) -> None:
    """``tune`` on a pool of ``workers`` processes, started and warm before the clock starts."""
    from engine.execution import Campaign
    from engine.execution.executors import LocalExecutor
    from engine.execution.tuning import tune
    from engine.runners import runner_from_spec
    from engine.space.factors import Factor, Space

    os.environ["BENCH_SLEEP"] = str(sleep)  # before the pool's processes start: they read it
    space = Space([Factor("x", "integer", tuple(range(16))), Factor("z", "integer", tuple(range(16)))])
    runner = runner_from_spec({"kind": "python", "callable": "bench.batch_tuning:sleepy", "path": str(Path(__file__).parents[1])},
                              space=space)
    with LocalExecutor(workers) as pool:
        campaign = Campaign(runner, pool, space=space)
        campaign.run([{"x": i % 16, "z": 15 - i // 16} for i in range(4 * workers)], lambda c, r: None)  # every worker started
        strategy = make_strategy(name, space, measurements, seed=0)
        started = time.perf_counter()
        cpu = time.process_time()
        result = tune(strategy, campaign)
        took = time.perf_counter() - started
    ideal = measurements * sleep / workers
    print(f"  {name:5s} {workers:2d} workers: wall {took:6.2f} s, ideal {ideal:5.2f} s, efficiency {ideal / took:.2f}; "
          f"this process {time.process_time() - cpu:.2f} CPU-s; {result.measurements} measured")


def sleepy(config: dict[str, Any]) -> float:
    """The wall bench's objective: a fixed sleep, then a bowl with its minimum at (11, 5)."""
    time.sleep(float(os.environ.get("BENCH_SLEEP", "0.5")))
    return float((config["x"] - 11) ** 2 + (config["z"] - 5) ** 2 + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--ks", default="1,4,8,16")
    parser.add_argument("--strategies", default="AUTO,TPE,BO")
    parser.add_argument("--liars", help="constant liars to choose from held out, e.g. min,mean,max")
    parser.add_argument("--select-k", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--wall", action="store_true", help="the wall-time part instead of the quality part")
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--measurements", type=int, default=64)
    parser.add_argument("--sleep", type=float, default=0.5)
    parser.add_argument("--wall-one", nargs=2, metavar=("STRATEGY", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.wall_one:
        wall_one(args.wall_one[0], int(args.wall_one[1]), args.measurements, args.sleep)
        return
    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}), {len(os.sched_getaffinity(0))} cores")
    if args.wall:
        wall(args)
    elif args.liars:
        liars(args)
    else:
        quality(args)


if __name__ == "__main__":
    main()
