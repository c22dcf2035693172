"""Measure one configuration now, without a study (``tunelab measure``): nothing is stored."""

from __future__ import annotations

from typing import Any

from engine.execution import Campaign, executor_from_name
from engine.runners.base import MeasureResult, Runner


def measure_once(runner: Runner, config: dict[str, Any], *, executor: str = "auto", workers: int | None = None,
                 scheduler: str | None = None) -> list[MeasureResult]:
    """Every repeat's result for ``config``, measured on the named executor."""
    results: list[MeasureResult] = []
    with executor_from_name(executor, workers=workers, scheduler=scheduler, runner=runner) as pool:
        Campaign(runner, pool).run([config], lambda _config, result: results.append(result))
    return results
