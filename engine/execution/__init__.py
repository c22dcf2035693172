"""Running measurement campaigns: executors (inline, local pool, pinned timing worker, Dask), the
:class:`Campaign` that streams results to a callback, the tuning loop and the protocol of a run
that pauses for a person (:mod:`engine.execution.review`).

Names are imported on first use (PEP 562): ``tunelab --help`` reads the executor table
(:mod:`engine.execution.registry`) without paying for pandas; Dask is imported only when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.lazy import lazy_exports

_EXPORTS = {
    "campaign": ("Campaign", "Progress", "as_configs", "stored_repeats"),
    "executors": ("Executor", "InlineExecutor", "LocalExecutor", "TimingExecutor"),
    "registry": ("EXECUTORS", "executor_from_name"),
    "worker": ("Task",),
}
if TYPE_CHECKING:  # what mypy sees of the lazy names (_EXPORTS is what runs); keep the two in step
    from engine.execution.campaign import Campaign as Campaign
    from engine.execution.campaign import Progress as Progress
    from engine.execution.campaign import as_configs as as_configs
    from engine.execution.campaign import stored_repeats as stored_repeats
    from engine.execution.executors import Executor as Executor
    from engine.execution.executors import InlineExecutor as InlineExecutor
    from engine.execution.executors import LocalExecutor as LocalExecutor
    from engine.execution.executors import TimingExecutor as TimingExecutor
    from engine.execution.registry import EXECUTORS as EXECUTORS
    from engine.execution.registry import executor_from_name as executor_from_name
    from engine.execution.worker import Task as Task
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
