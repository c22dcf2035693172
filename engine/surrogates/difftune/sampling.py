"""DiffTune's random parameter tables (difftune.md §3): what the simulated data set is drawn from, and the
parameter learner's random start.

A sample covers only the opcodes of the block it is for (every other row absent, as DiffTune's zeros);
``RandomState(seed)`` draws everything in a fixed order, so the seed alone reproduces the table:
dispatch width, ROB size, then per key in sorted order latency, µops, the 7 ReadAdvance slots, the number
of port picks and each pick (a single unit, uniformly, with replacement; a repeated pick overwrites).
Groups are never drawn (DiffTune's ``use_groups=False``) but stay in the resource model, learnable later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from engine.surrogates.difftune.params import N_SLOTS, OpParams, ParamTable

#: Inclusive ranges of §3 (the command-line defaults of DiffTune's runner.py).
LATENCY = (0, 5)
UOPS = (0, 5)
READ_ADVANCE = (0, 5)
PORT_PICKS = (0, 2)
PORT_CYCLES = (0, 2)
DISPATCH_WIDTH = (1, 10)
ROB_SIZE = (50, 250)


def _uniform(rng: np.random.RandomState, bounds: tuple[int, int]) -> int:
    return int(rng.randint(bounds[0], bounds[1] + 1))


def sample_table(keys: Iterable[str], model: ParamTable, seed: int) -> ParamTable:
    """A random table over ``keys`` with ``model``'s resource model and what DiffTune does not learn (units,
    groups, retire width, scheduler size, idioms the model does not know). µops are drawn from 0..5 and
    written as at least 1, as DiffTune writes them for the simulator."""
    rng = np.random.RandomState(seed)
    units = [name for name, _ in model.units]
    width, rob = _uniform(rng, DISPATCH_WIDTH), _uniform(rng, ROB_SIZE)
    rows = {}
    for key in sorted(set(keys)):
        latency, uops = _uniform(rng, LATENCY), _uniform(rng, UOPS)
        advance = tuple(_uniform(rng, READ_ADVANCE) for _ in range(N_SLOTS))
        ports: dict[str, int] = {}
        for _ in range(_uniform(rng, PORT_PICKS)):
            unit = units[int(rng.randint(len(units)))] if units else None
            cycles = _uniform(rng, PORT_CYCLES)
            if unit is not None:
                ports[unit] = cycles
        rows[key] = OpParams(max(uops, 1), latency, advance, tuple(sorted((u, c) for u, c in ports.items() if c)))
    return replace(model, dispatch_width=width, rob_size=rob, rows=rows,
                   provenance={"source": "DiffTune's §3 sampling", "seed": str(seed)})
