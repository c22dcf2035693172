"""Background jobs for the dashboard: long work (a measurement campaign, a strategy comparison) runs
in a thread of the server process, so the page stays responsive, shows live progress and can cancel.

The server process owns the DuckDB file, so a job's results are committed from that thread through
the shared store (which serialises access). Jobs live as long as the server; a page finds its job
again by key after a rerun or a reload.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st


@dataclass
class Job:
    """One background task: its progress, the rows it produced so far, and how it ended."""

    key: str
    label: str
    started: float = field(default_factory=time.time)
    progress: Any = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    finished: float | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    cancel_hook: Callable[[], None] | None = None
    thread: threading.Thread | None = None
    seen: list[tuple[float, float]] = field(default_factory=list)  # (time, fraction) each time the fraction moved

    @property
    def running(self) -> bool:
        return self.finished is None

    def cancel(self) -> None:
        self.cancel_event.set()
        if self.cancel_hook is not None:
            self.cancel_hook()

    def eta_seconds(self, fraction: float) -> float | None:
        """Remaining seconds at the throughput measured so far: from the first time the fraction was seen to
        move to the latest, so the start-up before the first result (a process pool, a table loading) never
        counts; None until progress has been seen to move twice. Each call notes the fraction it is given (the
        pages ask on every poll). Extrapolating the elapsed time instead said "about 492 s left" for a 17 s run
        (issue 31)."""
        now = time.time()
        if not self.seen or fraction != self.seen[-1][1]:
            self.seen.append((now, fraction))
        if not 0 < fraction < 1:
            return None
        moved = [(t, f) for t, f in self.seen if f > self.seen[0][1]]
        if len(moved) < 2:
            return None
        (t0, f0), (t1, f1) = moved[0], moved[-1]
        if f1 <= f0 or t1 <= t0:
            return None
        return (1.0 - f1) * (t1 - t0) / (f1 - f0)


@st.cache_resource(show_spinner=False)
def _registry() -> dict[str, Job]:
    return {}


def get_job(key: str) -> Job | None:
    return _registry().get(key)


def start_job(key: str, label: str, work: Callable[[Job], Any]) -> Job:
    """Run ``work(job)`` in a daemon thread, unless a job with this key is still running."""
    registry = _registry()
    current = registry.get(key)
    if current is not None and current.running:
        return current
    job = Job(key=key, label=label)

    def target() -> None:
        try:
            job.result = work(job)
        except Exception as exc:  # shown on the page as one line; the traceback goes to the server log
            job.error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            traceback.print_exc()
        finally:
            job.finished = time.time()

    job.thread = threading.Thread(target=target, name=f"tunelab-job-{key}", daemon=True)
    registry[key] = job
    job.thread.start()
    return job
