"""Synthetic objectives with a known truth, for demos, tests and teaching.

``toy`` is the CCGrid'19 tutorial problem (docs/dlmt.md §3) as its generating code has it:
``y = -1.5 x1 + 1.3 x3 + 3.1 x5 - 1.4 x7 + 1.35 x8² + 1.6 x1 x3 + ε``, ε ~ N(0, 0.6²);
x2, x4 and x6 are inert. The noise is drawn from a generator seeded by the configuration and the
repeat, so re-measuring the same point gives the same value, as a table would.

:class:`SyntheticRunner` measures them like any runner, so a replayed or resumed campaign sees the
same values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.runners.base import Runner, Trial, check_options
from engine.runners.table import key_of
from engine.space.factors import Space


def toy_truth(frame: pd.DataFrame) -> np.ndarray:
    """The noise-free toy response (its minimum is -8.9 at x1=1, x3=-1, x5=-1, x7=1, x8=0)."""
    x = {name: frame[name].to_numpy(dtype=float) for name in ("x1", "x3", "x5", "x7", "x8")}
    response: np.ndarray = -1.5 * x["x1"] + 1.3 * x["x3"] + 3.1 * x["x5"] - 1.4 * x["x7"] + 1.35 * x["x8"] ** 2 + 1.6 * x["x1"] * x["x3"]
    return response


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


def evaluate(runner: Mapping[str, Any], frame: pd.DataFrame, keys: list[str], repeat: int = 0) -> np.ndarray:
    """Measure ``frame`` with the synthetic objective named in ``runner`` (``{"kind": "synthetic", "name": ...}``)."""
    name = runner.get("name", "toy")
    if name not in OBJECTIVES:
        raise UserError(f"synthetic objective {name!r} is not one of {', '.join(OBJECTIVES)}")
    truth, default_sd = OBJECTIVES[name]
    sd = float(runner.get("noise_sd", default_sd))
    return truth(frame) + (_noise(keys, repeat, sd, int(runner.get("seed", 0))) if sd > 0 else 0.0)


class SyntheticRunner(Runner):
    kind = "synthetic"
    in_process = True
    OPTIONS = ("name", "noise_sd", "seed")

    def __init__(self, space: Space, options: Mapping[str, Any], **common: Any) -> None:
        super().__init__(**common)
        name = options.get("name", "toy")
        if name not in OBJECTIVES:
            raise UserError(f"runner 'synthetic': objective {name!r} is not one of {', '.join(OBJECTIVES)}")
        self.space = space
        self.options = {k: options[k] for k in self.OPTIONS if k in options}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], *, space: Space | None = None, **_: object) -> SyntheticRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if space is None:
            raise UserError("runner 'synthetic': needs the study's space")
        return cls(space, spec, **cls.common(spec))

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        key = key_of(self.space, config)
        frame = pd.DataFrame([{n: config[n] for n in self.space.names}])
        values = [float(evaluate(self.options, frame, [key], repeat=start + i)[0]) for i in range(repeats)]
        return Trial(values=values, metadata={"objective": self.options.get("name", "toy")})
