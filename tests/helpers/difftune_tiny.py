"""A tiny DiffTune world for tests: 30 real blocks, a 4-port resource model, simulated samples, a small network."""

from __future__ import annotations

import pandas as pd

from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate
from engine.surrogates.difftune.train import Samples, TrainConfig

MODEL = ParamTable(dispatch_width=4, rob_size=192, units=(("P0", 1), ("P1", 1), ("P2", 1), ("P5", 1)),
                   groups=(("P01", ("P0", "P1")),))
HEXES = [
    "4801c3", "48031e4801d8", "4889074c8b07", "480fafc0", "31c04801c3", "b0014801c3", "48f7f3", "5b5d415c",
    "c5fc5806c5fc58c0", "4883d0004813442408", "488b4424f84801c3", "4801c34801c14801c24801c6", "480fafc34801d8",
    "4c8d0c804d01c8", "4889c34829d3", "48ffc04839d8", "c5f459c2c5ec58c8", "488b07488b5f08", "4885c04809c3",
    "48c1e0034801c3", "89c801d0", "4831db4801c3", "66480f6ec0", "0f28c10f59c2", "4d89c14d01c8",
    "480fafc0480fafc0", "488d04404801d8", "4821c34809d8", "48f7d84801c3", "8b074801c3",
]
TINY = TrainConfig(embedding=16, hidden=16, layers=1, batch=64)


def tiny_blocks() -> list[Block]:
    decoded = decode_blocks(HEXES)
    assert all(isinstance(b, Block) for b in decoded), decoded
    return [b for b in decoded if isinstance(b, Block)]


def tiny_samples(blocks: list[Block], per_block: int = 20) -> Samples:
    """``per_block`` random tables per block, simulated (seeds disjoint between blocks)."""
    rows = [(i, seed, int(simulate([b], sample_table({x.key for x in b.instructions}, MODEL, seed))[0]))
            for i, b in enumerate(blocks) for seed in range(100 * i, 100 * i + per_block)]
    return Samples(pd.DataFrame(rows, columns=["block", "seed", "cycles"]), blocks, MODEL)
