"""Our llvm-mca-like simulator against llvm-mca-19 on the 2,000 anchor blocks: accuracy and speed.

Usage: python bench/difftune_sim.py [--cache DIR] [--archs haswell,skylake,ivybridge,znver3] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import pickle
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.simulate import simulate

ANCHOR = Path("/work/shared/data/llvm_mca_anchor/bhive_sample2000_llvm_mca_cycles100.csv")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def decoded(hexes: list[str], cache: Path) -> list[Block | str]:
    path = cache / "decoded.pkl"
    if path.exists():
        data: list[Block | str] = pickle.loads(path.read_bytes())
        if len(data) == len(hexes):
            return data
    data = decode_blocks(hexes)
    path.write_bytes(pickle.dumps(data))
    return data


def mca_cycles(blocks: list[Block], mcpu: str) -> np.ndarray:
    """llvm-mca-19 Total Cycles, 100 code regions per process."""
    out: list[int] = []
    for start in range(0, len(blocks), 100):
        chunk = blocks[start:start + 100]
        text = "".join(f"# LLVM-MCA-BEGIN b{i}\n" + "\n".join(x.asm for x in b.instructions) + f"\n# LLVM-MCA-END b{i}\n"
                       for i, b in enumerate(chunk))
        proc = subprocess.run(["llvm-mca-19", "-mtriple=x86_64-unknown-unknown", f"-mcpu={mcpu}", "-iterations=100",
                               "--all-views=0", "--summary-view", "--json"], input=text, capture_output=True, text=True,
                              check=True)
        out += [r["SummaryView"]["TotalCycles"] for r in json.loads(proc.stdout)["CodeRegions"]]
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=".cache/difftune")
    parser.add_argument("--archs", default="haswell,skylake,ivybridge,znver3")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    frame = pd.read_csv(ANCHOR)
    if args.limit:
        frame = frame.head(args.limit)
    results = decoded(list(frame["hex"]), cache)
    keep = [i for i, b in enumerate(results) if isinstance(b, Block)]
    blocks = [b for b in results if isinstance(b, Block)]
    print(f"CPU: {cpu_model()}; blocks: {len(blocks)} of {len(frame)} decoded")
    for arch in args.archs.split(","):
        table = default_table(blocks, arch, cache)
        usable = [i for i, b in enumerate(blocks) if all(x.key in table.rows for x in b.instructions)]
        sub = [blocks[i] for i in usable]
        simulate(sub[:1], table)  # compile outside the timing
        t0 = time.perf_counter()
        ours = simulate(sub, table)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = mca_cycles(sub, arch)
        t_mca = time.perf_counter() - t0
        column = f"{arch}_mca19"
        if column in frame.columns:
            anchor = frame[column].to_numpy()[[keep[i] for i in usable]]
            agree = float(np.mean(anchor == theirs))
            print(f"  {arch}: our llvm-mca-19 run equals the CSV on {agree:.1%} of blocks")
        ape = np.abs(ours - theirs) / theirs
        tau = kendalltau(ours, theirs).statistic
        print(f"{arch:10s} n={len(sub)} MAPE {ape.mean():.2%}  median APE {np.median(ape):.2%}  "
              f"within 5% {np.mean(ape <= 0.05):.1%}  tau-b {tau:.3f}  | ours {len(sub) / t_ours:,.0f} blocks/s, "
              f"llvm-mca batched {len(sub) / t_mca:,.0f} blocks/s, ratio {t_mca / t_ours:.1f}x (1 core each)")


if __name__ == "__main__":
    main()
