"""DiffTune's random parameter tables (difftune.md §3): what the simulated data set is drawn from, and the
parameter learner's random start.

A sample covers only the opcodes of the block it is for (every other row absent, as DiffTune's zeros);
``RandomState(seed)`` draws everything in a fixed order, so the seed alone reproduces the table:
dispatch width, ROB size, then per key in sorted order latency, µops, the 7 ReadAdvance slots, the number
of port picks and each pick (a single unit, uniformly, with replacement; a repeated pick overwrites).
Groups are never drawn (DiffTune's ``use_groups=False``) but stay in the resource model, learnable later.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

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


#: The 9 values of an opcode's row (latency, µops, ReadAdvance slots) share one range, so one vectorised draw
#: gives them: numpy's legacy ``randint(lo, hi, size=n)`` yields the stream of ``n`` scalar calls with the same
#: bounds (tests/test_difftune_sampling.py checks it), four times faster than drawing them one by one.
ROW_VALUES = 2 + N_SLOTS
if not LATENCY == UOPS == READ_ADVANCE:
    raise AssertionError("a row's values are drawn in one call: their ranges must agree")


def _uniform(rng: np.random.RandomState, bounds: tuple[int, int], size: int | None = None) -> Any:
    return rng.randint(bounds[0], bounds[1] + 1, size=size)


@dataclass(frozen=True)
class Draw:
    """One seed's random values for sorted keys: what :func:`sample_table` writes and :func:`sample_rows` packs."""

    dispatch_width: int
    rob_size: int
    #: ``[keys, 2 + N_SLOTS]``: latency, µops as drawn (0..5), the ReadAdvance slots.
    values: np.ndarray
    #: Per key: unit index → cycles (a repeated pick overwrites; zero cycles kept, as drawn).
    ports: list[dict[int, int]]


_GENERATORS = threading.local()


def _seeded(seed: int) -> np.random.RandomState:
    """This thread's generator reseeded: the stream of ``RandomState(seed)`` (seeding rebuilds all its state)
    without building one, which takes 110 µs, a third of a sample's encoding."""
    rng: np.random.RandomState | None = getattr(_GENERATORS, "rng", None)
    if rng is None:
        rng = _GENERATORS.rng = np.random.RandomState()
    rng.seed(seed)
    return rng


def draw(keys: Sequence[str], units: int, seed: int) -> Draw:
    """The draws of ``RandomState(seed)`` for ``keys`` (sorted, distinct) over ``units`` resource units."""
    rng = _seeded(seed)
    width, rob = int(_uniform(rng, DISPATCH_WIDTH)), int(_uniform(rng, ROB_SIZE))
    values = np.empty((len(keys), ROW_VALUES), dtype=np.int64)
    ports: list[dict[int, int]] = []
    for k in range(len(keys)):
        values[k] = _uniform(rng, LATENCY, ROW_VALUES)
        picked: dict[int, int] = {}
        for _ in range(int(_uniform(rng, PORT_PICKS))):
            unit = int(rng.randint(units)) if units else None
            cycles = int(_uniform(rng, PORT_CYCLES))
            if unit is not None:
                picked[unit] = cycles
        ports.append(picked)
    return Draw(width, rob, values, ports)


def sample_table(keys: Iterable[str], model: ParamTable, seed: int) -> ParamTable:
    """A random table over ``keys`` with ``model``'s resource model and what DiffTune does not learn (units,
    groups, retire width, scheduler size, idioms the model does not know). µops are drawn from 0..5 and
    written as at least 1, as DiffTune writes them for the simulator."""
    ordered = sorted(set(keys))
    units = [name for name, _ in model.units]
    drawn = draw(ordered, len(units), seed)
    rows = {}
    for key, values, picked in zip(ordered, drawn.values.tolist(), drawn.ports, strict=True):
        latency, uops, *advance = values
        rows[key] = OpParams(max(uops, 1), latency, tuple(advance),
                             tuple(sorted((units[u], c) for u, c in picked.items() if c)))
    return replace(model, dispatch_width=drawn.dispatch_width, rob_size=drawn.rob_size, rows=rows,
                   provenance={"source": "DiffTune's §3 sampling", "seed": str(seed)})


def sample_rows(keys: Sequence[str], model: ParamTable, seed: int, resources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``sample_table(keys, model, seed)`` as the surrogate reads it, without building the table: the rows of
    ``keys`` (sorted, distinct) in :func:`surrogate.param_matrix`'s columns over ``resources``, and the globals.
    Why: encoding millions of samples for training spends most of its time building tables it only reads."""
    units = [name for name, _ in model.units]
    column = {name: i for i, name in enumerate(resources)}
    unit_column = [column[name] for name in units]
    drawn = draw(keys, len(units), seed)
    out = np.zeros((len(keys), len(resources) + ROW_VALUES), dtype=np.float32)
    base = len(resources)
    out[:, base:base + N_SLOTS] = drawn.values[:, 2:]
    out[:, base + N_SLOTS] = np.maximum(drawn.values[:, 1], 1)
    out[:, base + N_SLOTS + 1] = drawn.values[:, 0]
    for k, picked in enumerate(drawn.ports):
        for unit, cycles in picked.items():
            out[k, unit_column[unit]] = cycles
    return out, np.array([drawn.dispatch_width, drawn.rob_size], dtype=np.float32)
