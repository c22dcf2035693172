"""Running measurement campaigns: executors (inline, local pool, pinned timing worker, Dask) and the
:class:`Campaign` that streams results to a callback. Dask is imported only when asked for."""

from engine.execution.campaign import Campaign, Progress, as_configs, stored_repeats
from engine.execution.executors import Executor, InlineExecutor, LocalExecutor, TimingExecutor
from engine.execution.record import store_recorder
from engine.execution.registry import EXECUTORS, executor_from_name
from engine.execution.worker import Task

__all__ = [
    "EXECUTORS",
    "Campaign",
    "Executor",
    "InlineExecutor",
    "LocalExecutor",
    "Progress",
    "Task",
    "TimingExecutor",
    "as_configs",
    "executor_from_name",
    "store_recorder",
    "stored_repeats",
]
