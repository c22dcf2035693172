"""DaskExecutor: measurements on a Dask distributed cluster (``--scheduler tcp://HOST:8786``), or on
a LocalCluster started here when no scheduler is given.

The runner is scattered to every worker once. A runner that uses a GPU asks each task for one unit
of the worker resource ``GPU``, so a worker started with ``--resources GPU=1`` (one per GPU) runs
one measurement at a time on its GPU while CPU-only tasks are not held back. Results come back to
the calling process (the one that owns the DuckDB file), which commits them as they arrive.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from typing import Any

from engine.errors import UserError
from engine.execution.executors import Executor
from engine.execution.worker import Task, failed, measure
from engine.runners.base import MeasureResult, Runner

#: Seconds the workers' slot count is kept before the scheduler is asked again.
SLOTS_TTL_S = 1.0
SCHEDULER_ADDRESS = re.compile(r"^(?:(?:tcp|tls|inproc|ws|wss|ucx)://)?[A-Za-z0-9_.\-\[\]:]+$")


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, scheduler: str | None = None, *, client: Any = None, workers: int | None = None,
                 resource: str = "GPU", connect_timeout: float = 10.0) -> None:
        import distributed

        dask: Any = distributed  # untyped: its clients, clusters and futures are Any here
        self.resource = resource
        self._cluster: Any = None
        self._own_client = client is None
        self._runner: Runner | None = None
        self._runner_future: Any = None
        self._slots: tuple[float, int] | None = None
        self.client: Any
        if client is not None:
            self.client = client
        elif scheduler:
            if not SCHEDULER_ADDRESS.match(scheduler):
                raise UserError(f"--scheduler {scheduler!r}: expected an address like tcp://HOST:8786")
            try:
                self.client = dask.Client(scheduler, timeout=f"{connect_timeout}s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise UserError(f"--scheduler {scheduler}: cannot connect ({str(exc).splitlines()[0][:200]})") from None
        else:
            n = workers or max(1, len(os.sched_getaffinity(0)))
            # silence_logs: the workers share this command's stderr, and a worker whose heartbeat races the
            # scheduler's shutdown (Ctrl-C, SIGTERM) logs a traceback at ERROR; a lost worker or task reaches the
            # campaign as a failed result, in one line, so below CRITICAL the workers' logs only add noise.
            # Free ports on 127.0.0.1 only: with dashboard_address=None the scheduler's HTTP server still took the
            # fixed port 8787 (a second tunelab run, or anything else there, then got another or failed); ":0" and no
            # dashboard leave it a free port for its health routes.
            self._cluster = dask.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                              dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                                              silence_logs=logging.CRITICAL)
            self.client = dask.Client(self._cluster)

    def _gpu_units(self) -> float:
        workers = self.client.scheduler_info().get("workers", {})
        return sum(float(w.get("resources", {}).get(self.resource, 0)) for w in workers.values())

    def bind(self, runner: Runner) -> None:
        if runner is self._runner:
            return
        if runner.uses_gpu and self._gpu_units() <= 0:
            raise UserError(f"dask: no worker declares the '{self.resource}' resource; start one worker per GPU "
                            f"with --resources {self.resource}=1")
        self._runner = runner
        self._slots = None  # a GPU runner counts GPU units, not threads
        self._runner_future = self.client.scatter(runner, broadcast=True, hash=False)

    def slots(self) -> int:
        """The threads (GPU units for a GPU runner) of the workers present now, asked of the scheduler at most once a
        second: a campaign reads this before each submission, and workers that join or leave change it."""
        now = time.monotonic()
        if self._slots is None or now - self._slots[0] > SLOTS_TTL_S:
            if self._runner is not None and self._runner.uses_gpu:
                count = int(self._gpu_units())
            else:
                count = int(sum(self.client.nthreads().values()))
            self._slots = (now, max(1, count))
        return self._slots[1]

    def submit(self, task: Task) -> Any:
        if self._runner_future is None or self._runner is None:  # bind sets both
            raise RuntimeError("DaskExecutor.submit before bind")
        resources = {self.resource: 1} if self._runner.uses_gpu else None
        return self.client.submit(measure, self._runner_future, task, pure=False, resources=resources)

    def wait_any(self, handles: Sequence[Any], timeout: float) -> list[Any]:
        import distributed

        dask: Any = distributed
        try:
            done, _ = dask.wait(list(handles), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        return [h for h in handles if h in done]

    def result(self, handle: Any, task: Task) -> list[MeasureResult]:
        try:
            results: list[MeasureResult] = handle.result()
            return results
        except Exception as exc:  # noqa: BLE001 - a lost worker or a cancelled task is a failed result
            return failed(task, f"dask: {type(exc).__name__}: {exc}")

    def cancel(self, handle: Any) -> bool:
        """Dask cannot tell queued from running: a cancelled running task's result is dropped."""
        if handle.done():
            return False
        handle.cancel()
        return True

    def close(self) -> None:
        if self._own_client and self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._own_client = False
