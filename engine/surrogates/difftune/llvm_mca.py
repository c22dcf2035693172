"""llvm-mca-19's own predictions for many blocks: the reference the simulator is held to, and a baseline.

Blocks go 100 per process as ``# LLVM-MCA-BEGIN``/``END`` code regions (the anchor data's method: the
same figures as one process per block, ~20 times faster). A batch llvm-mca rejects is retried block by
block, so one bad block costs only its own prediction (NaN).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence

import numpy as np

from engine.errors import UserError, brief
from engine.surrogates.difftune.decode import Block

LLVM_MCA = "llvm-mca-19"
BATCH = 100
_MCPU = re.compile(r"^[a-z0-9_.-]+$")


def total_cycles(blocks: Sequence[Block], mcpu: str, iterations: int = 100) -> np.ndarray:
    """``Total Cycles`` of each block over ``iterations`` (cycles per 100 iterations at the default)."""
    if not _MCPU.fullmatch(mcpu):
        raise UserError(f"mcpu: not a CPU name: {brief(mcpu)}")
    out = np.full(len(blocks), np.nan)
    for start in range(0, len(blocks), BATCH):
        chunk = list(blocks[start:start + BATCH])
        cycles = _run(chunk, mcpu, iterations)
        if cycles is None:  # one block spoils the batch: find it
            cycles = [(_run([block], mcpu, iterations) or [np.nan])[0] for block in chunk]
        out[start:start + len(chunk)] = cycles
    return out


def _run(blocks: list[Block], mcpu: str, iterations: int) -> list[float] | None:
    text = "".join(f"# LLVM-MCA-BEGIN b{i}\n" + "".join(f"{x.asm}\n" for x in block.instructions)
                   + f"# LLVM-MCA-END b{i}\n" for i, block in enumerate(blocks))
    done = subprocess.run([LLVM_MCA, "-mtriple=x86_64-unknown-unknown", f"-mcpu={mcpu}", f"-iterations={iterations}",
                           "--all-views=0", "--summary-view", "--json"], input=text, capture_output=True, text=True,
                          check=False)
    if "is not a recognized processor" in done.stderr:
        raise UserError(f"mcpu: llvm-mca-19 does not know {brief(mcpu)}")
    if done.returncode != 0:
        return None
    regions = json.loads(done.stdout)["CodeRegions"]
    if len(regions) != len(blocks):
        return None
    return [float(region["SummaryView"]["TotalCycles"]) for region in regions]
