"""The held-out part of a measured data set is decided by each block's bytes: the same on every run and machine,
whatever else the file holds, in the shares the learning runs assume."""

from __future__ import annotations

import numpy as np
import pytest

from engine.io.paths import REPO_ROOT
from engine.surrogates.difftune.noise import read_measured
from engine.surrogates.difftune.split import PARTS, part_indices, part_of


@pytest.fixture(scope="module")
def hexes() -> list[str]:
    return list(read_measured(REPO_ROOT / "data" / "difftune" / "amd-25-1-1.csv.gz")["hex"])


def test_the_parts_partition_the_blocks_in_their_shares(hexes: list[str]) -> None:
    parts = part_indices(hexes)
    together = np.sort(np.concatenate([parts[name] for name in PARTS]))
    assert together.tolist() == list(range(len(hexes)))
    shares = [len(parts[name]) / len(hexes) for name in PARTS]
    assert shares == pytest.approx([0.7, 0.1, 0.2], abs=0.01)


def test_a_block_keeps_its_part_whatever_surrounds_it_and_however_its_hex_is_cased(hexes: list[str]) -> None:
    some = hexes[:500]
    alone = [part_of(h) for h in some]
    assert [part_of(h.upper()) for h in some] == alone
    shuffled = [some[i] for i in np.random.default_rng(0).permutation(len(some))]
    where = part_indices(shuffled)
    assert {shuffled[i]: name for name in PARTS for i in where[name]} == dict(zip(some, alone))
