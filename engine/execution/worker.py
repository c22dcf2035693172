"""What runs inside a worker (a pool process, a Dask worker): measure one task, never raise.

A runner bug or a library crash becomes a 'failed' result for that configuration, so one bad
configuration cannot end a campaign; the runner is installed once per worker process.

A pool worker dies with the process that owns the pool (:func:`die_with`): pool workers are children
of multiprocessing's fork server, not of that process, and the fork server lives as long as any
worker does, so without this a ``kill -9`` of ``tunelab run`` left workers, fork server and resource
tracker running for ever. A worker that stops (its owner died, or SIGTERM) first kills what it is
measuring (:func:`engine.runners.process.kill_running`).
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, NoReturn

from engine.runners.base import MeasureResult, Runner
from engine.runners.process import die_with_parent, kill_running

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


def install(runner: Runner, core: int | None = None, owner: int | None = None) -> None:
    """Pool initializer: keep the runner for this process; pin it to ``core`` when given; end with
    the ``owner`` process when given."""
    global _INSTALLED
    _INSTALLED = runner
    if core is not None:
        os.sched_setaffinity(0, {core})
    if owner is not None:
        die_with(owner)


def stop(code: int) -> NoReturn:
    """End this worker now, with what it is measuring."""
    try:
        kill_running()
    finally:
        os._exit(code)


def die_with(owner: int) -> None:
    """End this worker when ``owner`` ends (a watcher thread), or on SIGTERM; leave Ctrl-C to the
    owner, which stops the pool itself. Also dies with its parent, the fork server."""
    signal.signal(signal.SIGTERM, lambda signum, frame: stop(128 + signum))
    signal.signal(signal.SIGINT, lambda signum, frame: None)  # a handler, not SIG_IGN: children must not inherit it
    die_with_parent()
    threading.Thread(target=_watch, args=(owner,), name="tunelab-owner-watch", daemon=True).start()


def _watch(owner: int) -> None:
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:
        stop(1)
    except (AttributeError, OSError):  # no pidfd (old kernel, not Linux): poll
        while _exists(owner):
            time.sleep(0.5)
        stop(1)
    select.select([handle], [], [])  # readable once the owner has exited
    stop(1)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        pass
    return True


def measure_installed(task: Task) -> list[MeasureResult]:
    if _INSTALLED is None:
        return failed(task, "worker has no runner installed")
    return measure(_INSTALLED, task)
