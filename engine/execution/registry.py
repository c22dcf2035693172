"""Executors by name: the one table the CLI's ``--executor`` and the Run page's choice are made from."""

from __future__ import annotations

from engine.errors import UserError, brief
from engine.execution.executors import Executor, InlineExecutor, LocalExecutor, TimingExecutor

#: name -> what it is, as a person choosing one reads it.
EXECUTORS = {
    "local": "Process pool (parallel, this machine)",
    "timing": "Timing mode (one pinned worker, serial: for timing-sensitive kernels)",
    "dask": "Dask cluster (a local one, or --scheduler tcp://HOST:8786)",
    "inline": "In this process (simplest)",
}


def executor_from_name(name: str, *, workers: int | None = None, scheduler: str | None = None) -> Executor:
    """The executor a CLI flag or a page's choice names. Dask is imported only when asked for."""
    if scheduler and name != "dask":
        raise UserError(f"scheduler {brief(scheduler)}: only used with the dask executor")
    if name == "inline":
        return InlineExecutor()
    if name == "local":
        return LocalExecutor(workers)
    if name == "timing":
        return TimingExecutor()
    if name == "dask":
        from engine.execution.dask_executor import DaskExecutor

        return DaskExecutor(scheduler=scheduler, workers=workers)
    raise UserError(f"executor {brief(name)} is not one of {', '.join(EXECUTORS)}")
