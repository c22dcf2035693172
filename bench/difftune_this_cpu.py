"""Issue 33 §3's bar on the committed measured CPUs: every baseline a learned table must beat, scored on held-out
measured blocks (llvm-mca-19 itself, the simulator with llvm-mca's defaults, the simple table, greedy search on the
real simulator from each start), in one run with the same split and the same simulator-call budget.

The truth is each block's robust value over its passes (engine/surrogates/difftune/noise.py), the split the one
``tunelab difftune evaluate --held-out`` uses (a hash of each block's bytes, engine/surrogates/difftune/split.py),
and the test set's noise ceiling is printed beside the figures: the MAPE one half of the passes makes against the
other. Each predictor's MAPE is also split between the blocks whose store and load meet at one address in the
harness (a dependency through memory that llvm-mca and the simulator do not model) and the rest.

Usage: python bench/difftune_this_cpu.py --measured data/difftune/amd-25-1-1.csv.gz [--arch znver3]
           [--limit N] [--budget CALLS] [--seed 0] [--subsample 2000] [--sample 200 ...] [--memory-forwarding]
           [--save-tables DIR]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from engine.surrogates.difftune.categories import harness_aliasing
from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.greedy import greedy_search
from engine.surrogates.difftune.llvm_mca import total_cycles
from engine.surrogates.difftune.measure import cpu_identity
from engine.surrogates.difftune.metrics import accuracy
from engine.surrogates.difftune.noise import half_truths, pass_suffixes, read_measured, robust_truth
from engine.surrogates.difftune.params import ParamTable, simple_table
from engine.surrogates.difftune.simulate import simulated
from engine.surrogates.difftune.split import part_indices

ARCH_OF = {"intel-6-167-1": "sapphirerapids", "amd-25-1-1": "znver3"}


def noise_ceiling(rows: pd.DataFrame, hexes: list[str]) -> str:
    """The truth of the odd passes against that of the even ones, on ``hexes``: how close any predictor can get."""
    if len(pass_suffixes(list(rows.columns))) < 2:
        return "one pass: no noise ceiling"
    both = half_truths(rows).reindex(hexes).dropna()
    score = accuracy(both["odd"], both["even"])
    return (f"noise ceiling (odd passes' truth vs even passes', {score.n:,} test blocks): MAPE {score.mape:.2%}, "
            f"within 5% {score.within_5pct:.1%}, tau {score.kendall_tau:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", required=True)
    parser.add_argument("--arch")
    parser.add_argument("--cache", default=".cache/difftune")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--budget", type=int, default=0, help="simulator calls (default: 20 evaluations of the training blocks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--subsample", type=int, default=2000, help="also greedy from simple on this many training blocks (0: not)")
    parser.add_argument("--sample", type=int, nargs="*", default=[],
                        help="also greedy from each start on every training block, each decision on at most this many")
    parser.add_argument("--save-tables", help="folder for the searched tables (JSON)")
    parser.add_argument("--memory-forwarding", action="store_true",
                        help="the simulator's tables make loads wait for the older store to their address")
    args = parser.parse_args()
    path = Path(args.measured)
    cpu_id = path.name.split(".")[0]
    arch = args.arch or ARCH_OF[cpu_id]
    rows = read_measured(path)
    truth = robust_truth(rows)
    if args.limit:
        truth = truth.head(args.limit)
    t0 = time.perf_counter()
    decoded = decode_blocks(list(truth["hex"]))
    keep = [i for i, b in enumerate(decoded) if isinstance(b, Block)]
    blocks: list[Block] = [decoded[i] for i in keep]  # type: ignore[misc]
    values = truth["cycles"].to_numpy(float)[keep]
    defaults = default_table(blocks, arch, args.cache)
    usable = [i for i, b in enumerate(blocks) if all(x.key in defaults.rows for x in b.instructions)]
    blocks, values = [blocks[i] for i in usable], values[usable]
    parts = part_indices([b.hex for b in blocks])
    train, test = parts["train"], parts["test"]
    train = train[np.random.default_rng(args.seed).permutation(len(train))]  # the subsample: the first ones
    identity = cpu_identity()
    print(f"run on {identity.model_name} ({identity.short_id}); truth {cpu_id} (-mcpu={arch}), {len(blocks):,} blocks "
          f"decoded with a default row ({time.perf_counter() - t0:.0f} s): {len(train):,} train, {len(test):,} test")
    print(noise_ceiling(rows, [blocks[i].hex for i in test]))
    budget = args.budget or 20 * len(train)
    pick = lambda index: [blocks[int(i)] for i in index]  # noqa: E731
    test_blocks = pick(test)
    simple = simple_table({x.key for b in blocks for x in b.instructions})
    if args.memory_forwarding:  # loads wait for the older store to their address, as in the harness
        defaults, simple = replace(defaults, memory_forwarding=1), replace(simple, memory_forwarding=1)
    tables: dict[str, ParamTable] = {"defaults (simulator)": defaults, "simple table": simple}
    runs: list[tuple[str, np.ndarray, int | None]] = [("defaults (simulator)", train, None), ("simple table", train, None)]
    if args.subsample:  # the same budget on fewer blocks: more parameters visited, more of them on few blocks
        runs.append(("simple table", train[:args.subsample], None))
    for sample in args.sample:  # every block, each decision on a fresh draw of at most ``sample`` holders
        runs += [("simple table", train, sample), ("defaults (simulator)", train, sample)]
    for name, blocks_used, sample in runs:
        t = time.perf_counter()
        found = greedy_search(pick(blocks_used), values[blocks_used], tables[name], budget, seed=args.seed,
                              sample=sample)
        label = (f"greedy from {name.split(' ')[0]}" + (f" on {len(blocks_used):,}" if len(blocks_used) < len(train) else "")
                 + (f" drawing {sample}" if sample else ""))
        tables[label] = replace(found.table, provenance={
            "source": f"bench/difftune_this_cpu.py: {label}", "truth": f"{cpu_id} (robust truth, train part of split.py)",
            "budget": f"{budget} simulator calls", "seed": str(args.seed)})
        print(f"  {label}: {found.calls:,} of {budget:,} calls, training MAPE {found.history['mape'].iloc[-1]:.2%} "
              f"({time.perf_counter() - t:.0f} s)")
    predictions = {name: simulated(test_blocks, table) for name, table in tables.items()}
    predictions[f"llvm-mca-19 -mcpu={arch}"] = total_cycles(test_blocks, arch)
    aliasing = np.array([harness_aliasing(b) for b in test_blocks])
    print(f"{'predictor':32s} {'MAPE':>8s} {'median':>8s} {'within5':>8s} {'tau':>6s} | MAPE on the {aliasing.mean():.1%} "
          "of test blocks whose store and load meet in the harness, and on the rest")
    for name, cycles in predictions.items():
        score = accuracy(cycles, values[test])
        meeting, rest = (accuracy(cycles[part], values[test][part]).mape for part in (aliasing, ~aliasing))
        print(f"{name:32s} {score.mape:8.2%} {score.median_ape:8.2%} {score.within_5pct:8.1%} {score.kendall_tau:6.3f} | "
              f"{meeting:6.1%} {rest:6.1%}")
    if args.save_tables:
        folder = Path(args.save_tables)
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            suffix = "-forwarding" if args.memory_forwarding else ""
            table.save(folder / f"{cpu_id}-{name.replace(' ', '-').replace('(', '').replace(')', '')}{suffix}.json")


if __name__ == "__main__":
    main()
