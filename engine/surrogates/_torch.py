"""torch for Tunelab's own learning (the DiffTune surrogate and parameters, the cost model), loaded so that its
OpenMP threads sleep rather than spin while they wait.

Why: by default torch's OpenMP threads spin between parallel regions. Tunelab trains small models on machines
whose few cores it shares with the dashboard, workers, a second training or the test suite; the spinning
threads then take the cores the others need (2 epochs of a tiny surrogate took 21 s instead of 3 s beside one
busy process, on 2 cores). libgomp reads ``OMP_WAIT_POLICY`` once, when torch loads it, so the variable is set
for that import only and removed afterwards: the programs Tunelab measures never inherit it. A policy the user
set is left as it is, and so is a torch that something else loaded first (the torch runner measures with
torch's own defaults)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_POLICY = "OMP_WAIT_POLICY"

if "torch" in sys.modules or _POLICY in os.environ:
    import torch
else:
    os.environ[_POLICY] = "PASSIVE"
    try:
        import torch
    finally:
        del os.environ[_POLICY]

import torch.nn.functional as F  # noqa: E402 - after the guarded import above
from torch import nn  # noqa: E402

__all__ = ["F", "available_cpus", "nn", "threads", "torch"]


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask: a pinned or containerised process may use fewer than the
    machine has, and torch's own default counts the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextmanager
def threads(count: int) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` for the block, then put back."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
