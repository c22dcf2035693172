"""The usual ``on_result`` callback: commit each result to the store the moment it arrives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.runners.base import MeasureResult
from storage import Store, StoredStudy

Echo = Callable[[dict[str, Any], MeasureResult], None]


def store_recorder(store: Store, study: StoredStudy, *, design_id: int | None = None, strategy: str | None = None,
                   step: int | None = None, echo: Echo | None = None) -> Echo:
    """A callback for :meth:`engine.execution.Campaign.run` that stores each result (one transaction
    per result) with its provenance, then calls ``echo(config, result)`` if given."""

    def on_result(config: dict[str, Any], result: MeasureResult) -> None:
        store.record_measurement(
            study, config, result.value, result.status, error=result.error, repeat=result.repeat, host=result.host,
            started_at=result.started_at, finished_at=result.finished_at, strategy=strategy, step=step,
            design_id=design_id, metadata=result.metadata,
        )
        if echo is not None:
            echo(config, result)

    return on_result
