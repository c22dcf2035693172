"""What runs inside a worker (a pool process, a Dask worker): measure one task, never raise.

A runner bug or a library crash becomes a 'failed' result for that configuration, so one bad
configuration cannot end a campaign; the runner is installed once per worker process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from engine.runners.base import MeasureResult, Runner

_INSTALLED: Runner | None = None


@dataclass(frozen=True)
class Task:
    """One configuration to measure: ``repeats`` repeats numbered from ``start``."""

    index: int
    config: dict[str, Any]
    repeats: int
    start: int = 0


def failed(task: Task, error: str) -> list[MeasureResult]:
    return [MeasureResult(None, "failed", error, task.start)]


def measure(runner: Runner, task: Task) -> list[MeasureResult]:
    try:
        return runner.measure(task.config, task.repeats, task.start)
    except Exception as exc:  # noqa: BLE001 - Runner.measure catches already; this guards a broken runner
        return failed(task, f"{type(exc).__name__}: {exc}")


def install(runner: Runner, core: int | None = None) -> None:
    """Pool initializer: keep the runner for this process; pin it to ``core`` when given."""
    global _INSTALLED
    _INSTALLED = runner
    if core is not None:
        os.sched_setaffinity(0, {core})


def measure_installed(task: Task) -> list[MeasureResult]:
    if _INSTALLED is None:
        return failed(task, "worker has no runner installed")
    return measure(_INSTALLED, task)
