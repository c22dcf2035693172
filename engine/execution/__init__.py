"""Running measurement campaigns: executors (inline, local pool, pinned timing worker, Dask), the
:class:`Campaign` that streams results to a callback, the tuning loop and the protocol of a run
that pauses for a person (:mod:`engine.execution.review`).

Names are imported on first use (PEP 562): ``tunelab --help`` reads the executor table
(:mod:`engine.execution.registry`) without paying for pandas; Dask is imported only when asked for.
"""

from __future__ import annotations

from engine.lazy import lazy_exports

_EXPORTS = {
    "campaign": ("Campaign", "Progress", "as_configs", "stored_repeats"),
    "executors": ("Executor", "InlineExecutor", "LocalExecutor", "TimingExecutor"),
    "registry": ("EXECUTORS", "executor_from_name"),
    "worker": ("Task",),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
