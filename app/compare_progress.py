"""What a running comparison says on the Compare page: runs done of all, each unfinished strategy's count,
the time left at the measured throughput and, while a slow run holds the count still, how long ago the last
run ended (the page redraws every second, so the line never freezes; issue 31 §2)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: Seconds without a finished run after which the line says how long ago the last one ended.
QUIET_S = 5.0


@dataclass
class CompareProgress:
    """Counts of finished runs, fed by the comparison's ``progress(done, total, strategy)`` after each run;
    ``strategies`` under the names the runs report (the registry's, not an alias)."""

    strategies: list[str]
    reps: int
    done: int = 0
    total: int = 0
    by_strategy: dict[str, int] = field(default_factory=dict)
    last_run_at: float | None = None

    def __call__(self, done: int, total: int, strategy: str) -> None:
        self.by_strategy[strategy] = self.by_strategy.get(strategy, 0) + 1
        self.done, self.total, self.last_run_at = done, total, time.time()

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def text(self, eta_s: float | None, now: float | None = None) -> str:
        """``"45/160 runs · BO 5/20 · DLMT 0/20 · about 38 s left"``, and ``"· last run ended 12 s ago"`` when the
        count has stood still for QUIET_S."""
        parts = [f"{self.done}/{self.total} runs"]
        parts += [f"{name} {self.by_strategy.get(name, 0)}/{self.reps}" for name in self.strategies
                  if self.by_strategy.get(name, 0) < self.reps]
        if eta_s:
            parts.append(f"about {eta_s:.0f} s left")
        quiet = (now if now is not None else time.time()) - self.last_run_at if self.last_run_at else 0.0
        if quiet >= QUIET_S:
            parts.append(f"last run ended {quiet:.0f} s ago")
        return " · ".join(parts)

