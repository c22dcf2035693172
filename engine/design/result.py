"""What every design generator returns: the configurations plus how they were obtained."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class DesignResult:
    """A design: ``design`` holds one valid configuration per run.

    ``rows`` are 0-based row numbers in the candidate table when the runs were chosen from one
    (D-optimal designs always; other generators when given a candidate table), forced rows first.
    ``criteria`` are AlgDesign's D, A, I, Ge, Dea when a model formula was involved; ``coded`` is the
    ±1 matrix of two-level designs (with dummy columns); ``info`` holds generator-specific facts
    (resolution, dropped invalid runs, exchanges, ...).
    """

    kind: str
    design: pd.DataFrame
    seconds: float
    rows: tuple[int, ...] | None = None
    criteria: dict[str, float] = field(default_factory=dict)
    log_det: float | None = None
    repeats: int | None = None
    forced: tuple[int, ...] = ()
    coded: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return len(self.design)

    @property
    def new_rows(self) -> tuple[int, ...]:
        """Rows chosen by this design, without the forced (already measured) ones."""
        return tuple(r for r in (self.rows or ()) if r not in set(self.forced))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (the design as a list of records)."""
        out: dict[str, Any] = {"kind": self.kind, "runs": self.runs, "seconds": self.seconds}
        if self.criteria:
            out["criteria"] = dict(self.criteria)
        if self.log_det is not None:
            out["log_det"] = self.log_det
        if self.repeats is not None:
            out["repeats"] = self.repeats
        if self.rows is not None:
            out["rows"] = list(self.rows)
        if self.forced:
            out["forced"] = list(self.forced)
        out.update(self.info)
        out["design"] = self.design
        if self.coded is not None:
            out["coded"] = self.coded
        return out
