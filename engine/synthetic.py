"""Synthetic objectives with a known truth, for demos, tests and teaching.

``toy`` is the CCGrid'19 tutorial problem (docs/dlmt.md §3) as its generating code has it:
``y = -1.5 x1 + 1.3 x3 + 3.1 x5 - 1.4 x7 + 1.35 x8² + 1.6 x1 x3 + ε``, ε ~ N(0, 0.6²);
x2, x4 and x6 are inert. The noise is drawn from a generator seeded by the configuration and the
repeat, so re-measuring the same point gives the same value, as a table would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from engine.errors import UserError


def toy_truth(frame: pd.DataFrame) -> np.ndarray:
    """The noise-free toy response (its minimum is -8.9 at x1=1, x3=-1, x5=-1, x7=1, x8=0)."""
    x = {name: frame[name].to_numpy(dtype=float) for name in ("x1", "x3", "x5", "x7", "x8")}
    return -1.5 * x["x1"] + 1.3 * x["x3"] + 3.1 * x["x5"] - 1.4 * x["x7"] + 1.35 * x["x8"] ** 2 + 1.6 * x["x1"] * x["x3"]


OBJECTIVES: dict[str, tuple[Callable[[pd.DataFrame], np.ndarray], float]] = {
    # name: (noise-free response, default noise standard deviation)
    "toy": (toy_truth, 0.6),
}


def _noise(keys: list[str], repeat: int, sd: float, seed: int) -> np.ndarray:
    out = np.empty(len(keys))
    for i, key in enumerate(keys):
        digest = hashlib.blake2b(f"{seed}|{repeat}|{key}".encode(), digest_size=8).digest()
        out[i] = np.random.default_rng(int.from_bytes(digest, "little")).normal(0.0, sd)
    return out


def evaluate(runner: Mapping, frame: pd.DataFrame, keys: list[str], repeat: int = 0) -> np.ndarray:
    """Measure ``frame`` with the synthetic objective named in ``runner`` (``{"kind": "synthetic", "name": ...}``)."""
    name = runner.get("name", "toy")
    if name not in OBJECTIVES:
        raise UserError(f"synthetic objective {name!r} is not one of {', '.join(OBJECTIVES)}")
    truth, default_sd = OBJECTIVES[name]
    sd = float(runner.get("noise_sd", default_sd))
    return truth(frame) + (_noise(keys, repeat, sd, int(runner.get("seed", 0))) if sd > 0 else 0.0)
