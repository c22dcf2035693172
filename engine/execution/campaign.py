"""A campaign measures a list of configurations through an executor and hands each result to a
callback as it arrives; the callback is where the caller (CLI, page, tuner) commits to the store.

    campaign = Campaign(runner, executor, repeats=3, space=spec.space)
    campaign.run(configs, on_result, on_progress=..., done=stored_repeats(space, store.measurements(name)))

* **Streaming**: results are delivered in the calling thread the moment a task finishes, so the
  one process that owns the DuckDB file commits them as they come (a round of results at a time when
  the callback has a ``flush``); a crash loses at most the tasks in flight and the round not committed.
* **Resume**: ``done`` maps configuration keys to the repeats already stored; a configuration is
  skipped when complete, or continues at the next repeat number, so nothing stored is re-measured.
* **Cancel**: :meth:`Campaign.cancel` (from any thread) stops submitting, cancels queued tasks and
  delivers the results of those already running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from engine.execution.executors import Executor, InlineExecutor
from engine.execution.worker import Task
from engine.io.jsonable import plain
from engine.runners.base import MeasureResult, Runner
from engine.space.configs import config_keys
from engine.space.factors import Space

#: Seconds between checks for cancellation while waiting for a result.
POLL_S = 0.1
#: Repeats recorded for a configuration whose stored rows include a failure: it is complete.
COMPLETE = 1 << 30


@dataclass(frozen=True)
class Progress:
    """Where a campaign stands (passed to ``on_progress`` after each configuration, and returned)."""

    total: int
    completed: int = 0
    skipped: int = 0
    results: int = 0
    ok: int = 0
    not_ok: int = 0
    elapsed_s: float = 0.0
    cancelled: bool = False
    last_config: dict[str, Any] | None = field(default=None, compare=False)
    #: Measurements the executor runs at once now (a cluster's workers present; 0 before the executor is bound).
    workers: int = 0

    @property
    def fraction(self) -> float:
        return self.completed / self.total if self.total else 1.0

    @property
    def finished(self) -> bool:
        return self.completed == self.total

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "completed": self.completed, "skipped": self.skipped, "results": self.results,
                "ok": self.ok, "not_ok": self.not_ok, "elapsed_s": round(self.elapsed_s, 3), "cancelled": self.cancelled,
                "workers": self.workers}


def as_configs(configs: pd.DataFrame | Iterable[Mapping[str, Any]], names: list[str] | None = None) -> list[dict[str, Any]]:
    """Configurations as plain dicts (numpy scalars made Python), restricted to ``names`` if given."""
    if isinstance(configs, pd.DataFrame):
        rows = configs.to_dict(orient="records")
    else:
        rows = [dict(c) for c in configs]
    if names is not None:
        rows = [{n: row[n] for n in names} for row in rows]
    return [{k: plain(v) for k, v in row.items()} for row in rows]


def stored_repeats(space: Space, measurements: pd.DataFrame) -> dict[str, int]:
    """Config key -> repeats already stored (from ``Store.measurements``). A configuration with a
    non-ok row counts as complete: its failure is its result, so it is not re-measured."""
    if measurements is None or measurements.empty:
        return {}
    keys = pd.Series(config_keys(space, measurements), index=measurements.index)
    counts = keys.value_counts().to_dict()
    if "status" in measurements:
        for key in keys[measurements["status"] != "ok"].unique():
            counts[key] = COMPLETE
    return {str(k): int(v) for k, v in counts.items()}


class Flight:
    """Tasks measuring through an executor, fed and drained one at a time: what :meth:`Campaign.run` loops over, and
    what a tuning run keeps full while its strategy proposes (:func:`engine.execution.tuning.tune`).

    ``room`` is read from the executor each time, so a cluster's workers that join or leave during a run widen or
    narrow it within one poll. Beyond the running tasks, ``ahead`` more wait in the executor's queue: one keeps every
    worker busy; a campaign of known configurations queues the executor's own depth (a worker's worth for a pool),
    so that a round of results, committed in one transaction, can be as large as the workers deliver while the last
    one is committed (rounds capped at slots + 1 held the owner near 1,000 results/s with 16 workers)."""

    def __init__(self, executor: Executor, on_result: Callable[[dict[str, Any], MeasureResult], None],
                 flush: Callable[[], None] | None = None, ahead: int | None = None) -> None:
        self.executor = executor
        self.on_result = on_result
        self.flush = flush
        self.ahead = ahead
        self.tasks: dict[Any, Task] = {}

    @property
    def slots(self) -> int:
        return max(1, self.executor.slots())

    @property
    def room(self) -> int:
        ahead = self.executor.queue_depth() if self.ahead is None else self.ahead
        return self.slots + ahead - len(self.tasks)

    @property
    def busy(self) -> bool:
        return bool(self.tasks)

    def submit(self, task: Task) -> None:
        self.tasks[self.executor.submit(task)] = task

    def wait(self, timeout: float) -> list[tuple[Task, list[MeasureResult]]]:
        """The tasks that finished (waiting at most ``timeout`` s for the first), each result handed to
        ``on_result``, then ``flush`` called once for the round (a store commits the round in one transaction)
        before they are returned; if either raises, the tasks left are cancelled (:meth:`close`) by the caller."""
        finished = []
        for handle in self.executor.wait_any(list(self.tasks), timeout):
            task = self.tasks.pop(handle)
            results = self.executor.result(handle, task)
            for result in results:
                self.on_result(task.config, result)
            finished.append((task, results))
        if finished and self.flush is not None:
            self.flush()
        return finished

    def cancel_queued(self) -> None:
        """Drop the tasks not started yet (those running still report)."""
        for handle in list(self.tasks):
            if self.executor.cancel(handle):
                del self.tasks[handle]

    def close(self) -> None:
        """Cancel the tasks not started, then ``flush`` what was received: a round cut short (Ctrl-C, a failing
        callback) keeps the results that had arrived."""
        for handle in self.tasks:
            self.executor.cancel(handle)
        self.tasks = {}
        if self.flush is not None:
            self.flush()


class Campaign:
    """Measure configurations with ``runner`` through ``executor`` (default: in this process)."""

    def __init__(self, runner: Runner, executor: Executor | None = None, *, repeats: int | None = None,
                 space: Space | None = None) -> None:
        self.runner = runner
        self.executor = executor or InlineExecutor()
        self.repeats = runner.repeats if repeats is None else int(repeats)
        if self.repeats < 1:
            raise ValueError(f"repeats {self.repeats} must be >= 1")
        self.space = space
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the running campaign soon (thread-safe); results already measuring still arrive."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def flight(self, on_result: Callable[[dict[str, Any], MeasureResult], None], ahead: int | None = None) -> Flight:
        """The executor bound to this campaign's runner, ready to take tasks (:meth:`plan`'s), ``ahead`` of them
        queued beyond the running ones (None: the executor's :meth:`~Executor.queue_depth`). An ``on_result`` with
        a ``flush()`` (workflows.recording.StoreRecorder) has it called after each round of results."""
        self.executor.bind(self.runner)
        return Flight(self.executor, on_result, getattr(on_result, "flush", None), ahead)

    def plan(self, configs: pd.DataFrame | Iterable[Mapping[str, Any]],
             done: Mapping[str, int] | None = None) -> tuple[list[Task], int]:
        """The tasks still to run and how many configurations are already complete (with a space,
        a configuration listed twice is measured once)."""
        rows = as_configs(configs, self.space.names if self.space is not None else None)
        wanted = self.repeats if self.runner.max_repeats is None else min(self.repeats, self.runner.max_repeats)
        if self.space is None:
            if done:
                raise ValueError("Campaign: resuming with 'done' needs the study's space to key configurations")
            return [Task(i, row, wanted, 0) for i, row in enumerate(rows)], 0
        done = done or {}
        keys = config_keys(self.space, pd.DataFrame(rows, columns=self.space.names)) if rows else []
        tasks, skipped, seen = [], 0, set()
        for i, (row, key) in enumerate(zip(rows, keys)):
            if key in seen:  # a design may list a configuration twice: measure it once
                continue
            seen.add(key)
            have = int(done.get(key, 0))
            if have >= wanted:
                skipped += 1
            else:
                tasks.append(Task(i, row, wanted - have, have))
        return tasks, skipped

    def run(
        self,
        configs: pd.DataFrame | Iterable[Mapping[str, Any]],
        on_result: Callable[[dict[str, Any], MeasureResult], None],
        *,
        on_progress: Callable[[Progress], None] | None = None,
        done: Mapping[str, int] | None = None,
    ) -> Progress:
        """Measure every configuration not already ``done``; returns the final :class:`Progress`.

        ``on_result(config, result)`` runs in this thread for every result as it arrives; if it
        raises, queued tasks are cancelled and the exception propagates.
        """
        self._cancel.clear()
        tasks, skipped = self.plan(configs, done)
        progress = Progress(total=len(tasks) + skipped, completed=skipped, skipped=skipped)
        started = time.perf_counter()
        if on_progress is not None:
            on_progress(progress)
        if not tasks:
            return progress
        flight = self.flight(on_result)
        progress = replace(progress, workers=flight.slots)
        if on_progress is not None:
            on_progress(progress)
        pending = iter(tasks)
        exhausted = False
        try:
            while True:
                while not self.cancelled and not exhausted and flight.room > 0:
                    task = next(pending, None)
                    if task is None:
                        exhausted = True
                    else:
                        flight.submit(task)
                if self.cancelled:
                    flight.cancel_queued()
                if not flight.busy:
                    break
                for task, results in flight.wait(POLL_S):
                    good = sum(r.ok for r in results)
                    progress = replace(progress, completed=progress.completed + 1, results=progress.results + len(results),
                                       ok=progress.ok + good, not_ok=progress.not_ok + len(results) - good,
                                       elapsed_s=time.perf_counter() - started, last_config=task.config,
                                       workers=flight.slots)
                    if on_progress is not None:
                        on_progress(progress)
        finally:
            flight.close()
        return replace(progress, elapsed_s=time.perf_counter() - started, cancelled=self.cancelled)
