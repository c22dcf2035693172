"""Executors by name: the one table the CLI's ``--executor`` and the Run page's choice are made from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import UserError, brief

if TYPE_CHECKING:
    from engine.execution.executors import Executor

#: name -> what it is, as a person choosing one reads it.
EXECUTORS = {
    "local": "Process pool (parallel, this machine)",
    "timing": "Timing mode (one pinned worker, serial: for timing-sensitive kernels)",
    "dask": "Dask cluster (a local one, or --scheduler tcp://HOST:8786)",
    "inline": "In the calling process: the dashboard's or the command's (simplest)",
}


def executor_from_name(name: str, *, workers: int | None = None, scheduler: str | None = None) -> Executor:
    """The executor a CLI flag or a page's choice names. Imported only when asked for: the table
    above is what ``tunelab --help`` reads, and it must stay cheap."""
    from engine.execution.executors import InlineExecutor, LocalExecutor, TimingExecutor

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
