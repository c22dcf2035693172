"""DaskExecutor: measurements on a Dask distributed cluster (``--scheduler tcp://HOST:8786``), or on
a LocalCluster started here when no scheduler is given.

The runner is scattered to every worker once. A runner that uses a GPU asks each task for one unit
of the worker resource ``GPU``, so a worker started with ``--resources GPU=1`` (one per GPU) runs
one measurement at a time on its GPU while CPU-only tasks are not held back. Results come back to
the calling process (the one that owns the DuckDB file), which commits them as they arrive.

A worker that dies (``kill -9``, a crash, a lost machine) has the measurements it held, running or waiting there,
re-queued by the scheduler and measured elsewhere; each result says how many times that happened
(``metadata["requeued"]``: a measurement that was running is then measured again). After Dask's
``allowed-failures`` deaths (3 unless the scheduler's configuration says otherwise) it is a failed result that
says so, since a measurement that kills every worker it runs on would otherwise take the cluster down in turn.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import replace
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
                 resource: str = "GPU", connect_timeout: float = 10.0, port: int | None = None) -> None:
        import distributed

        dask: Any = distributed  # untyped: its clients, clusters and futures are Any here
        self.resource = resource
        self._cluster: Any = None
        self._own_client = client is None
        self._runner: Runner | None = None
        self._runner_future: Any = None
        self._slots: tuple[float, int] | None = None
        self._deaths: dict[str, int] = {}  # task key -> workers that died holding it, read as each round ends
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
            # dashboard leave it a free port for its health routes. ``port`` pins the scheduler's (a firewall rule).
            try:
                self._cluster = dask.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                                  scheduler_port=port or 0, dashboard_address="127.0.0.1:0",
                                                  scheduler_kwargs={"dashboard": False}, silence_logs=logging.CRITICAL)
            except (OSError, RuntimeError) as exc:  # "Cluster failed to start", caused by the OSError
                cause = exc.__cause__ if isinstance(exc, RuntimeError) else exc
                while cause is not None and not isinstance(cause, OSError):
                    cause = cause.__cause__
                if port is None or cause is None:
                    raise
                raise UserError(f"--cluster-port {port}: cannot listen there ({str(cause).splitlines()[0][:160]})") from None
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
        # A task that returns the runner, not scattered data: if every worker holding it dies at once, the scheduler
        # computes it again, where scattered data would be lost and every measurement waiting on it cancelled.
        self._runner_future = self.client.submit(_the_runner, runner, pure=False)

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
        except dask.client.FuturesCancelledError:  # ended, as a failed result each (result() says why)
            done = {h for h in handles if h.done()}
        finished = [h for h in handles if h in done]
        if finished:
            self._deaths.update(self.client.run_on_scheduler(_deaths_of(), keys=[h.key for h in finished]))
        return finished

    def result(self, handle: Any, task: Task) -> list[MeasureResult]:
        deaths = self._deaths.pop(handle.key, 0)
        try:
            results: list[MeasureResult] = handle.result()
        except Exception as exc:  # noqa: BLE001 - a lost worker or a cancelled task is a failed result
            if type(exc).__name__ == "KilledWorker":
                return failed(task, f"dask: {deaths} workers died while holding it (KilledWorker: a measurement that "
                                    "kills its worker?)")
            return failed(task, f"dask: {type(exc).__name__}: {exc}")
        if deaths:  # re-queued after its worker died: said in each repeat's metadata
            results = [replace(r, metadata={**r.metadata, "requeued": deaths}) for r in results]
        return results

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



def _the_runner(runner: Runner) -> Runner:
    return runner


def _deaths_of() -> Any:
    """A function for the scheduler: how many workers died while holding each of these tasks (those with any; Dask's
    ``suspicious`` count), as a task whose worker dies is re-queued and its result must say so. A closure, so that it is sent whole: the
    scheduler need not have this project installed."""

    def deaths(keys: list[str], dask_scheduler: Any = None) -> dict[str, int]:
        tasks = dask_scheduler.tasks
        return {key: tasks[key].suspicious for key in keys if key in tasks and tasks[key].suspicious}

    return deaths
