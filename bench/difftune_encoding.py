"""The surrogate's input pipeline: a batch built sample by sample (draw each θ, then the featuriser's padded
matrices: what training did per batch before) against the encoded data set's gathers, on the same samples.

Usage: python bench/difftune_encoding.py [--samples 20000] [--batch 256] [--blocks data/difftune/amd-25-1-1.csv.gz]
Prints the CPU, the time to encode the samples once and the time per batch of each path; their ratio is the
figure (a GPU's step is a few milliseconds, so the per-batch path, not the network, bounded GPU training).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from engine.surrogates.difftune.dataset import assignment
from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.encoding import encode
from engine.surrogates.difftune.measure import cpu_identity
from engine.surrogates.difftune.noise import read_measured
from engine.surrogates.difftune.surrogate import Featuriser
from engine.surrogates.difftune.tokens import Vocabulary
from engine.surrogates.difftune.train import Samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000, help="samples of the data set's first rounds")
    parser.add_argument("--batch", type=int, default=256, help="samples per batch")
    parser.add_argument("--blocks", default="data/difftune/amd-25-1-1.csv.gz", help="a tunelab blocks export")
    parser.add_argument("--arch", default="znver3", help="llvm-mca -mcpu of the tables' resource model")
    parser.add_argument("--cache", default=".cache/difftune", help="where llvm-mca's default tables are cached")
    args = parser.parse_args()
    frame = read_measured(Path(args.blocks))
    blocks = [b for b in decode_blocks(frame.loc[frame["status"] == "ok", "hex"].tolist()) if isinstance(b, Block)]
    model = default_table(blocks, args.arch, args.cache)
    block, seed = assignment(len(blocks), 0, args.samples)
    samples = Samples(pd.DataFrame({"block": block, "seed": seed, "cycles": np.ones(len(seed), np.int32)}), blocks, model)
    featuriser = Featuriser(Vocabulary.build(blocks), model.resources)
    batches = [np.arange(a, min(a + args.batch, args.samples)) for a in range(0, args.samples, args.batch)]

    start = time.perf_counter()
    for index in batches:
        picked = samples.frame.iloc[index]
        featuriser.batch([blocks[b] for b in picked["block"]], [samples.table(b, s) for b, s in zip(picked["block"], picked["seed"])])
    per_sample = (time.perf_counter() - start) / len(batches)

    start = time.perf_counter()
    encoded = encode(samples.frame, blocks, model, featuriser)
    encoding = time.perf_counter() - start
    start = time.perf_counter()
    for index in batches:
        encoded.batch(index)
    gathered = (time.perf_counter() - start) / len(batches)
    print(f"CPU {cpu_identity().label}; {args.samples:,} samples over {len(blocks):,} blocks, batch {args.batch}")
    print(f"sample by sample: {1e3 * per_sample:.1f} ms per batch")
    print(f"encoded: {encoding:.1f} s to encode once ({1e6 * encoding / args.samples:.0f} µs a sample), "
          f"{1e3 * gathered:.2f} ms per batch: {per_sample / gathered:.0f}× faster per batch")


if __name__ == "__main__":
    main()
