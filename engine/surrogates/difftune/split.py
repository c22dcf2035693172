"""Which part of a measured data set a block belongs to (train, validation, test), decided by the block's own
bytes: the same block lands in the same part whatever else a file holds, which blocks decode, or in what order,
so a table learned on one run's training part is scored on held-out blocks by any later command
(``tunelab difftune evaluate --held-out``) without sharing a permutation or a seed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

#: Shares of the parts, in per cent of the hash's 100 buckets.
TRAIN_PERCENT, VALIDATION_PERCENT = 70, 10
PARTS = ("train", "validation", "test")


def part_of(hex_text: str) -> str:
    """``hex_text``'s part: a bucket of 100 from its BLAKE2b digest (stable across Python runs and machines)."""
    bucket = int.from_bytes(hashlib.blake2b(hex_text.lower().encode(), digest_size=8).digest(), "big") % 100
    if bucket < TRAIN_PERCENT:
        return "train"
    return "validation" if bucket < TRAIN_PERCENT + VALIDATION_PERCENT else "test"


def part_indices(hexes: Sequence[str]) -> dict[str, np.ndarray]:
    """The positions of ``hexes`` in each part."""
    parts = np.array([part_of(h) for h in hexes])
    return {name: np.flatnonzero(parts == name) for name in PARTS}
