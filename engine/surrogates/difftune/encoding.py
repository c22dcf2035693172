"""Simulated samples as tensors for the surrogate: each distinct block's tokens once, each sample's θ rows for
its block's distinct opcodes in one flat table, and a batch gathered from them by index on whatever device
trains.

Why: a data set repeats each block under a hundred tables or more, and a block has 3.5 distinct opcodes for
5.5 instructions on average; building each batch's padded matrices in Python took longer than a GPU's step.
Encoding draws every sample's table once (:func:`sampling.sample_rows`, on worker processes for millions of
samples); a batch is then a few gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from engine.execution.executors import process_context
from engine.surrogates._torch import torch
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.sampling import sample_rows
from engine.surrogates.difftune.surrogate import BlockTokens, Featuriser, pad_tokens

#: Samples one encoding task draws: large enough that shipping the blocks' keys is a small part of it.
CHUNK = 50_000


@dataclass(frozen=True)
class EncodedSamples:
    """``N`` samples over ``U`` distinct blocks; every tensor on one device (:meth:`to`)."""

    #: The distinct blocks' tokens ``[U, I, T]``.
    tokens: BlockTokens
    #: ``[U, I]``: each instruction's row among its block's sorted distinct keys; −1 past the block's end.
    key_index: torch.Tensor
    #: ``[N]``: the sample's block among the distinct ones.
    block: torch.Tensor
    #: ``[N]``: where the sample's rows start in :attr:`rows`.
    offset: torch.Tensor
    #: ``[1 + Σ keys, features]``, uint8 (a sampled value is at most 5): every sample's rows one after another;
    #: row 0 is the zeros padding reads.
    rows: torch.Tensor
    #: ``[N, 2]``: dispatch width and ROB size (float32).
    globals_: torch.Tensor
    #: ``[N]``: the simulator's cycles per 100 iterations.
    cycles: torch.Tensor
    #: ``[N]`` on the host: instructions per sample (batches group similar lengths).
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)

    def to(self, device: torch.device) -> EncodedSamples:
        moved: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, torch.Tensor):
                value = value.to(device)
            elif isinstance(value, BlockTokens):
                value = BlockTokens(value.ids.to(device), value.token_counts.to(device), value.lengths.to(device))
            moved[field.name] = value
        return EncodedSamples(**moved)

    def batch(self, index: np.ndarray) -> tuple[tuple[BlockTokens, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
        """``ParamLstm.forward``'s arguments for samples ``index``, and their cycles."""
        at = torch.as_tensor(index, device=self.cycles.device)
        block_of = self.block[at]
        distinct, position = torch.unique(block_of, return_inverse=True)
        lengths = self.tokens.lengths[distinct]
        n = int(lengths.max())
        counts = self.tokens.token_counts[:, :n][distinct]
        tokens = BlockTokens(self.tokens.ids[:, :n, :int(counts.max())][distinct], counts, lengths)
        local = self.key_index[:, :n][block_of]
        flat = torch.where(local >= 0, self.offset[at].unsqueeze(1) + local, torch.zeros_like(local))
        return (tokens, position, self.rows[flat].to(torch.float32), self.globals_[at]), self.cycles[at]


def _draw_rows(keys: Sequence[Sequence[str]], model: ParamTable, resources: Sequence[str], blocks: np.ndarray,
               seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows (stacked) and globals of samples (``keys[blocks[n]]``, ``seeds[n]``): what a worker runs."""
    drawn = [sample_rows(keys[b], model, int(s), resources) for b, s in zip(blocks.tolist(), seeds.tolist(), strict=True)]
    return np.concatenate([r for r, _ in drawn]).astype(np.uint8), np.stack([g for _, g in drawn])


def encode(frame: pd.DataFrame, all_blocks: Sequence[Block], model: ParamTable, featuriser: Featuriser,
           workers: int = 1) -> EncodedSamples:
    """The tensors, on the CPU, of samples ``frame`` (columns ``block``, an index into ``all_blocks``, ``seed``
    and ``cycles``) whose tables were drawn under ``model``; ``workers`` processes draw a large data set's."""
    distinct, block_of = np.unique(frame["block"].to_numpy(), return_inverse=True)
    blocks = [all_blocks[int(b)] for b in distinct]
    keys = [sorted({i.key for i in b.instructions}) for b in blocks]
    tokens = pad_tokens(featuriser.tokens(blocks)) if blocks else BlockTokens(
        torch.zeros((0, 1, 1), dtype=torch.int64), torch.zeros((0, 1), dtype=torch.int64), torch.zeros(0, dtype=torch.int64))
    key_index = np.full(tuple(tokens.token_counts.shape), -1, dtype=np.int64)
    for u, (block, ordered) in enumerate(zip(blocks, keys, strict=True)):
        row = {key: k for k, key in enumerate(ordered)}
        key_index[u, :len(block.instructions)] = [row[i.key] for i in block.instructions]
    seeds = frame["seed"].to_numpy()
    parts = [(a, min(a + CHUNK, len(frame))) for a in range(0, len(frame), CHUNK)]
    resources = featuriser.resources
    if workers > 1 and len(parts) > 1:
        with ProcessPoolExecutor(min(workers, len(parts)), mp_context=process_context()) as pool:
            drawn = list(pool.map(_draw_rows, *zip(*[(keys, model, resources, block_of[a:b], seeds[a:b])
                                                    for a, b in parts], strict=True)))
    else:
        drawn = [_draw_rows(keys, model, resources, block_of[a:b], seeds[a:b]) for a, b in parts]
    counts = np.array([len(k) for k in keys], dtype=np.int64)[block_of]
    offset = 1 + np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(frame) else np.zeros(0, np.int64)
    rows = np.concatenate([np.zeros((1, featuriser.features), dtype=np.uint8), *(r for r, _ in drawn)])
    globals_ = np.concatenate([g for _, g in drawn]) if drawn else np.zeros((0, 2), dtype=np.float32)
    lengths = np.array([len(b.instructions) for b in blocks], dtype=np.int64)[block_of]
    return EncodedSamples(tokens, torch.from_numpy(key_index), torch.from_numpy(block_of.astype(np.int64)),
                          torch.from_numpy(offset), torch.from_numpy(rows), torch.from_numpy(globals_),
                          torch.from_numpy(frame["cycles"].to_numpy(dtype=np.float32)), lengths)

