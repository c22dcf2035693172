"""SyntheticRunner: the known-truth objectives of :mod:`engine.synthetic` (noise seeded by
configuration and repeat, so a replayed or resumed campaign sees the same values)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.errors import UserError
from engine.runners.base import Runner, Trial, check_options
from engine.runners.table import key_of
from engine.space import Space
from engine.synthetic import OBJECTIVES, evaluate


class SyntheticRunner(Runner):
    kind = "synthetic"
    OPTIONS = ("name", "noise_sd", "seed")

    def __init__(self, space: Space, options: Mapping[str, Any], **common) -> None:
        super().__init__(**common)
        name = options.get("name", "toy")
        if name not in OBJECTIVES:
            raise UserError(f"runner 'synthetic': objective {name!r} is not one of {', '.join(OBJECTIVES)}")
        self.space = space
        self.options = {k: options[k] for k in self.OPTIONS if k in options}

    @classmethod
    def from_spec(cls, spec: Mapping, *, space: Space | None = None, **_) -> SyntheticRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if space is None:
            raise UserError("runner 'synthetic': needs the study's space")
        return cls(space, spec, **cls.common(spec))

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        key = key_of(self.space, config)
        frame = pd.DataFrame([{n: config[n] for n in self.space.names}])
        values = [float(evaluate(self.options, frame, [key], repeat=start + i)[0]) for i in range(repeats)]
        return Trial(values=values, metadata={"objective": self.options.get("name", "toy")})
