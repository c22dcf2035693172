"""An exhaustive table as a replayable objective: what "measuring" means in an offline benchmark.

Measuring a configuration is a lookup (docs/dlmt.md §4.2). A configuration absent from the table is
``invalid``: for the Laplacian the table *is* the valid set (its README), and for a Kernel Tuner
cache absent configurations are the ones its restrictions exclude; rows the table marks failed are
failures (charged like any run). The table's rows are the strategies' candidates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.space.factors import Space
from engine.strategies.domain import Domain
from engine.study import StudySpec


@dataclass
class BenchTable:
    """A study spec plus its measured table, with a vectorised lookup by configuration code."""

    spec: StudySpec
    table: pd.DataFrame
    source: str = ""

    def __post_init__(self) -> None:
        ok = self.table["status"].to_numpy() == "ok"
        if not ok.any():
            raise UserError(f"table {self.source or self.spec.name}: no successfully measured row to compare against")
        self.domain = Domain(self.space, self.table[self.space.names])
        codes = self.domain.encode(self.space.to_level_index(self.table[self.space.names]))
        codes, first = np.unique(codes, return_index=True)
        self._codes = codes
        self._values = self.table["value"].to_numpy(dtype=float)[first]
        self._status = self.table["status"].astype(str).to_numpy(dtype=object)[first]
        values = self.table["value"].to_numpy(dtype=float)[ok]
        self.optimum = float(values.min() if self.spec.direction == "minimize" else values.max())
        if not self.optimum > 0:  # a slowdown is a ratio to the optimum
            raise UserError(f"table {self.source or self.spec.name}: its best {self.objective} is "
                            f"{self.optimum:g}; a slowdown (a ratio to the best) needs a positive best")

    @property
    def space(self) -> Space:
        return self.spec.space

    @property
    def objective(self) -> str:
        return self.spec.objective

    def evaluate(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and statuses of level-index rows (absent rows: NaN, ``invalid``)."""
        codes = self.domain.encode(index)
        at = np.minimum(np.searchsorted(self._codes, codes), len(self._codes) - 1)
        hit = self._codes[at] == codes
        values = np.where(hit, self._values[at], np.nan)
        status = np.where(hit, self._status[at], "invalid")
        return values, status

    def slowdown(self, value: float | None) -> float:
        """How much worse than the table's optimum (≥ 1; inf when nothing was found)."""
        if value is None or not np.isfinite(value):
            return float("inf")
        return value / self.optimum if self.spec.direction == "minimize" else self.optimum / value

    def to_payload(self) -> dict[str, Any]:
        """A picklable description, rebuilt in worker processes by :meth:`from_payload`."""
        return {"spec": self.spec.to_dict(), "table": self.table, "source": self.source}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> BenchTable:
        return cls(StudySpec.from_dict(payload["spec"]), payload["table"], payload["source"])


def load_table(path: str | Path, objective: str | None = None) -> BenchTable:
    """A CSV table (``objective`` names its column) or a Kernel Tuner cache (.json / .json.gz)."""
    from engine.io.ktcache import import_kt_cache
    from engine.io.table_import import import_table

    path = Path(path)
    if not path.is_file():
        raise UserError(f"--table {path}: no such file")
    lower = path.name.lower()
    if lower.endswith((".json", ".json.gz")):
        imported = import_kt_cache(path)
        if objective and objective != imported.spec.objective:
            raise UserError(f"--objective {objective!r}: a Kernel Tuner cache's objective is {imported.spec.objective!r}")
    else:
        if not objective:
            raise UserError(f"--objective: name the column of {path.name} to optimise")
        imported = import_table(path, objective=objective)
    return BenchTable(imported.spec, imported.table, path.name)

