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

__all__ = ["F", "nn", "torch"]
