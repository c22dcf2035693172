"""Our llvm-mca-like simulator against llvm-mca-19 on the 2,000 anchor blocks: accuracy and speed, side by
side in one run (each on one core: the simulator's numba core, and llvm-mca-19 batched 100 blocks per process).

Usage: python bench/difftune_sim.py [--archs haswell,skylake,ivybridge,sapphirerapids,znver3,znver4,znver5,HOST]
[--limit N] [--cache DIR]
``HOST`` stands for this machine's nearest -mcpu. Default tables are cached under ``--cache``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.llvm_mca import total_cycles
from engine.surrogates.difftune.measure import cpu_identity, nearest_mcpu
from engine.surrogates.difftune.metrics import accuracy
from engine.surrogates.difftune.simulate import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=".cache/difftune")
    parser.add_argument("--archs", default="haswell,skylake,ivybridge,sapphirerapids,znver3,znver4,znver5,HOST")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    identity = cpu_identity()
    host = nearest_mcpu(identity)
    frame = bhive.anchor()
    if args.limit:
        frame = frame.head(args.limit)
    decoded = decode_blocks(list(frame["hex"]))
    keep = [i for i, b in enumerate(decoded) if isinstance(b, Block)]
    blocks = [b for b in decoded if isinstance(b, Block)]
    print(f"CPU {identity.model_name} ({identity.short_id}, -mcpu={host}); {len(blocks)} of {len(frame)} blocks decoded")
    for arch in dict.fromkeys(host if a == "HOST" else a for a in args.archs.split(",")):  # HOST may repeat one
        table = default_table(blocks, arch, args.cache)
        usable = [i for i, b in enumerate(blocks) if all(x.key in table.rows for x in b.instructions)]
        sub = [blocks[i] for i in usable]
        simulate(sub[:1], table)  # compile outside the timing
        start = time.perf_counter()
        ours = simulate(sub, table)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        theirs = total_cycles(sub, arch)
        t_mca = time.perf_counter() - start
        column = f"{arch}_mca19"
        if column in frame.columns:
            same = float(np.mean(frame[column].to_numpy()[[keep[i] for i in usable]] == theirs))
            print(f"  {arch}: this llvm-mca-19 run equals the anchor CSV on {same:.1%} of blocks")
        score = accuracy(ours, theirs)
        print(f"{arch:15s} n={score.n} MAPE {score.mape:.2%}  median APE {score.median_ape:.2%}  within 5% "
              f"{score.within_5pct:.1%}  tau-b {score.kendall_tau:.3f}  | ours {len(sub) / t_ours:,.0f} blocks/s, "
              f"llvm-mca-19 batched {len(sub) / t_mca:,.0f} blocks/s: {t_mca / t_ours:.1f}x")


if __name__ == "__main__":
    main()
