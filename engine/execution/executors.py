"""Executors run measurement tasks somewhere and report them as they finish.

* :class:`InlineExecutor` — in the calling process, one at a time (tables, synthetic objectives,
  anything whose measurement is cheaper than shipping it to another process).
* :class:`LocalExecutor` — a process pool on this machine (``workers`` processes).
* :class:`TimingExecutor` — one worker process pinned to one core, measurements strictly one after
  another: for timing-sensitive kernels, so two measurements never share the machine.
* :class:`~engine.execution.dask_executor.DaskExecutor` — a Dask distributed cluster.

All share one small interface the :class:`~engine.execution.campaign.Campaign` drives: ``bind`` a
runner (shipped to the workers once), ``submit`` tasks, ``wait_any`` for finished ones, ``result``
(never raises: a lost worker is a 'failed' result) and ``cancel`` (tasks not yet started).

Leaving the ``with`` block normally waits for running measurements; leaving it through an exception
(Ctrl-C, SIGTERM turned into one, a failing callback) calls :meth:`Executor.terminate`, which stops
the workers and what they measure at once. Pool workers also die by themselves when the process
that owns the pool dies, even by ``kill -9`` (:func:`engine.execution.worker.die_with`).
"""

from __future__ import annotations

import multiprocessing
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any, Self

from engine.errors import UserError
from engine.execution.worker import Task, failed, install, measure, measure_installed
from engine.runners.base import MeasureResult, Runner

#: Seconds a terminated worker gets to kill its measurement and exit before it is killed.
_TERMINATE_S = 5.0


class Executor(ABC):
    """Where measurements run. Use as a context manager, or call :meth:`close`."""

    name: str = ""

    @abstractmethod
    def bind(self, runner: Runner) -> None:
        """Make ``runner`` the one that measures submitted tasks (shipped to workers once)."""

    @abstractmethod
    def slots(self) -> int:
        """How many tasks can run at once."""

    def queue_depth(self) -> int:
        """Tasks a campaign of known configurations queues beyond the running ones: as many again as run at once,
        so that results come back in rounds as large as the workers deliver them."""
        return max(1, self.slots())

    @abstractmethod
    def submit(self, task: Task) -> Any: ...

    @abstractmethod
    def wait_any(self, handles: Sequence[Any], timeout: float) -> list[Any]:
        """Handles (of ``handles``) that finished, waiting at most ``timeout`` seconds for the first."""

    @abstractmethod
    def result(self, handle: Any, task: Task) -> list[MeasureResult]: ...

    @abstractmethod
    def cancel(self, handle: Any) -> bool:
        """Cancel a task that has not started; False when it is already running or done."""

    def close(self) -> None:
        """Release workers (idempotent)."""

    def terminate(self) -> None:
        """Stop at once, running measurements included (idempotent); by default, :meth:`close`."""
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()


class _FuturesExecutor(Executor):
    """Executors built on :mod:`concurrent.futures`."""

    def wait_any(self, handles: Sequence[Future[list[MeasureResult]]], timeout: float) -> list[Future[list[MeasureResult]]]:
        done, _ = wait(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return [h for h in handles if h in done]

    def result(self, handle: Future[list[MeasureResult]], task: Task) -> list[MeasureResult]:
        try:
            return handle.result()
        except BrokenProcessPool:
            self._broken()
            return failed(task, "the worker process died during this measurement (crash or out of memory)")
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the configuration gets a result
            return failed(task, f"{type(exc).__name__}: {exc}")

    def cancel(self, handle: Future[list[MeasureResult]]) -> bool:
        return handle.cancel()

    def _broken(self) -> None:
        """A worker died: the next submit starts a fresh pool."""


class InlineExecutor(_FuturesExecutor):
    """Measures in the calling process at submit time (the returned future is already done).

    Timeouts still hold: a command runs as a child process killed at its deadline, and a Python
    callable with a timeout runs in a sandbox process (engine.runners.python_runner), so nothing
    measured here can block the calling process past its timeout."""

    name = "inline"

    def __init__(self) -> None:
        self._runner: Runner | None = None

    def bind(self, runner: Runner) -> None:
        self._runner = runner

    def slots(self) -> int:
        return 1

    def queue_depth(self) -> int:
        return 1  # a task is measured when submitted: queueing more would only hold back its result

    def submit(self, task: Task) -> Future[list[MeasureResult]]:
        if self._runner is None:
            raise RuntimeError("InlineExecutor.submit before bind")
        future: Future[list[MeasureResult]] = Future()
        future.set_result(measure(self._runner, task))
        return future


def process_context() -> multiprocessing.context.BaseContext:
    """forkserver where available: workers start clean, not as copies of a threaded parent (a
    Streamlit server, a DuckDB connection) that fork() could leave with a held lock."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class LocalExecutor(_FuturesExecutor):
    """A pool of worker processes on this machine; the runner is installed once per worker."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise UserError(f"workers {workers!r} must be a positive integer")
        self.workers = workers or max(1, len(os.sched_getaffinity(0)))
        self._runner: Runner | None = None
        self._pool: ProcessPoolExecutor | None = None

    def _initargs(self, runner: Runner) -> tuple[Runner, int | None, int]:
        return (runner, None, os.getpid())

    def _start(self, runner: Runner) -> ProcessPoolExecutor:
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=process_context(), initializer=install,
                                         initargs=self._initargs(runner))
        return self._pool

    def bind(self, runner: Runner) -> None:
        if runner is self._runner and self._pool is not None:
            return
        self.close()
        self._runner = runner

    def slots(self) -> int:
        return self.workers

    def submit(self, task: Task) -> Future[list[MeasureResult]]:
        if self._runner is None:
            raise RuntimeError(f"{type(self).__name__}.submit before bind")
        pool = self._pool if self._pool is not None else self._start(self._runner)
        return pool.submit(measure_installed, task)

    def _broken(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        """Cancel queued tasks and SIGTERM the workers, which kill what they measure and exit."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(_TERMINATE_S)
            if worker.is_alive():
                worker.kill()
                worker.join(_TERMINATE_S)


class TimingExecutor(LocalExecutor):
    """One worker pinned to one core, one measurement at a time (child processes inherit the pin,
    so an OpenMP kernel measured here runs all its threads on that core)."""

    name = "timing"

    def __init__(self, core: int | None = None) -> None:
        super().__init__(workers=1)
        allowed = sorted(os.sched_getaffinity(0))
        if core is not None and core not in allowed:
            raise UserError(f"core {core} is not one this process may use ({allowed})")
        # the last core: core 0 usually takes more interrupts and housekeeping
        self.core = allowed[-1] if core is None else core

    def _initargs(self, runner: Runner) -> tuple[Runner, int | None, int]:
        return (runner, self.core, os.getpid())
