"""CPU per run of Tunelab's strategies beside Optuna's TPE as a user drives it (issue 32 §4: AUTO's CPU per
200-measurement run ≤ Optuna TPE's), on the Kernel Tuner caches of the data folder, in one process, the methods
alternating run by run so that a busy neighbour weighs on each alike.

The CPU is the process's (``time.process_time``): strategy and bookkeeping, no measurement (the caches answer).
Each method runs once before timing (imports, caches). Run it from the repository root, as a module (it reads
bench/peers.py's Optuna driver). Printed: per space, each method's median CPU seconds per run
and its ratio to Optuna TPE's; then the geometric mean of those ratios over the spaces.

    python -m bench.strategy_cpu [--reps 5] [--budget 200] [--tunelab AUTO,TPE] [--spaces gemm_RTX_3090,...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from bench.peers import Cache, cache_paths, optuna_run
from engine.compare.replay import load_table
from engine.compare.run import run_benchmark
from engine.surrogates.difftune.measure import cpu_identity


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--tunelab", default="AUTO,TPE")
    parser.add_argument("--spaces", help="cache names (default: every cache of the data folder's kernel_tuner/)")
    args = parser.parse_args()
    paths = cache_paths(args.spaces)
    if paths is None:
        print("the shared data folder is absent", file=sys.stderr)
        return 1
    names = [n for n in args.tunelab.split(",") if n]
    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}); budget {args.budget}, {args.reps} runs per method "
          "and space; median CPU s per run (÷ Optuna TPE's)")
    ratios: dict[str, list[float]] = {name: [] for name in names}
    with threadpool_limits(1):  # as bench/peers.py's workers run: one BLAS thread
        for path in paths:
            table, cache = load_table(path), Cache(Path(path))
            runs = {"Optuna TPE": lambda rep: optuna_run(cache, args.budget, rep)}
            for name in names:
                runs[name] = lambda rep, name=name: run_benchmark(table, [name], reps=1, budget=args.budget,
                                                                  seed=rep)
            cpu: dict[str, list[float]] = {method: [] for method in runs}
            for rep in range(-1, args.reps):  # rep -1: the untimed first run of each
                for method, run in runs.items():
                    started = time.process_time()
                    run(rep + 1000 if rep < 0 else rep)
                    if rep >= 0:
                        cpu[method].append(time.process_time() - started)
            base = statistics.median(cpu["Optuna TPE"])
            cells = [f"Optuna TPE {base:.2f}"]
            for name in names:
                mine = statistics.median(cpu[name])
                ratios[name].append(mine / base)
                cells.append(f"{name} {mine:.2f} ({mine / base:.2f}×)")
            print(f"{cache.name}: " + ", ".join(cells), flush=True)
    for name, values in ratios.items():
        print(f"{name} ÷ Optuna TPE, geometric mean over {len(values)} spaces: {np.exp(np.mean(np.log(values))):.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
