"""The simulator against real llvm-mca-19 runs on hand-picked blocks, and numba == reference."""

import json
import subprocess

import pytest

from engine.surrogates.difftune.decode import Block, decode_block
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.simulate import simulate, simulate_reference, timeline

BLOCKS = {
    "add chain": "4801c34801d8",
    "independent adds": "4801c34801c14801c24801c6",
    "imul chain": "480fafc0",
    "load-op ReadAdvance": "48031e4801d8",
    "zero idiom": "31c04801c3",
    "partial register": "b0014801c3",
    "store/load pair": "4889074c8b07",
    "divide": "48f7f3",
    "pops": "5b5d415c415d415eb901000000",
    "vector load-op": "c5fc5806c5fc58c0",
    "adc through flags": "4883d0004813442408",
    "rep movs": "f3a4",
}


def _mca(block: Block, mcpu: str, iterations: int = 100) -> int:
    text = "\n".join(i.asm for i in block.instructions) + "\n"
    proc = subprocess.run(["llvm-mca-19", "-mtriple=x86_64-unknown-unknown", f"-mcpu={mcpu}",
                           f"-iterations={iterations}", "--all-views=0", "--summary-view", "--json"],
                          input=text, capture_output=True, text=True, check=True)
    return int(json.loads(proc.stdout)["CodeRegions"][0]["SummaryView"]["TotalCycles"])


@pytest.fixture(scope="module")
def setup() -> tuple[list[Block], object]:
    blocks = [decode_block(h) for h in BLOCKS.values()]
    return blocks, default_table(blocks, "haswell")


def test_matches_llvm_mca_haswell(setup: tuple) -> None:
    blocks, table = setup
    ours = simulate(blocks, table)
    theirs = [_mca(b, "haswell") for b in blocks]
    assert dict(zip(BLOCKS, ours.tolist())) == dict(zip(BLOCKS, theirs))


def test_idioms_follow_the_model() -> None:
    """Sapphire Rapids' LLVM 19 model recognises no zero idiom: ``xorl %esi, %esi`` waits for its input."""
    blocks = [decode_block(h) for h in ("31f64889df", "31c04801c3", "660fefc0660fd4c0", "39f64801c3")]
    table = default_table(blocks, "sapphirerapids")
    assert table.dependent_idioms
    assert simulate(blocks, table).tolist() == [_mca(b, "sapphirerapids") for b in blocks]


def test_reference_equals_numba(setup: tuple) -> None:
    blocks, table = setup
    assert [simulate_reference(b, table, iterations=20) for b in blocks] == simulate(blocks, table, 20).tolist()


def test_timeline_like_llvm_mca(setup: tuple) -> None:
    blocks, table = setup
    frame = timeline(blocks[0], table, iterations=3)
    assert list(frame["issued"]) == [1, 2, 3, 4, 5, 6]  # a 1-cycle add chain issues once per cycle
    assert int(frame["retired"].max()) + 1 == _mca(blocks[0], "haswell", 3)
