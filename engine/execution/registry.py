"""Executors by name: the one table the CLI's ``--executor`` and the Run page's choice are made from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import UserError, brief

if TYPE_CHECKING:
    from engine.execution.executors import Executor
    from engine.runners.base import Runner

#: name -> what it is, as a person choosing one reads it.
EXECUTORS = {
    "auto": "Automatic: in this process for a runner with nothing to isolate (a table, a synthetic function), "
            "else the process pool",
    "local": "Process pool (parallel, this machine)",
    "timing": "Timing mode (one pinned worker, serial: for timing-sensitive kernels)",
    "dask": "Dask cluster (a local one, or --scheduler tcp://HOST:8786)",
    "inline": "In the calling process: the dashboard's or the command's (simplest)",
}


def resolved(name: str, runner: Runner | None) -> str:
    """The executor ``auto`` stands for with ``runner``: inline for one measured in process
    (:attr:`~engine.runners.base.Runner.in_process`), else the process pool; any other name as it is."""
    if name != "auto":
        return name
    return "inline" if runner is not None and runner.in_process else "local"


def executor_from_name(name: str, *, workers: int | None = None, scheduler: str | None = None,
                       runner: Runner | None = None, port: int | None = None) -> Executor:
    """The executor a CLI flag or a page's choice names (``auto``: :func:`resolved` for ``runner``); ``port`` pins the
    scheduler port of the local Dask cluster (default: a free one). Imported only when asked for: the table above is
    what ``tunelab --help`` reads, and it must stay cheap."""
    from engine.execution.executors import InlineExecutor, LocalExecutor, TimingExecutor

    if scheduler and name != "dask":
        raise UserError(f"scheduler {brief(scheduler)}: only used with the dask executor")
    if scheduler and workers is not None:
        raise UserError(f"workers {workers}: a cluster at scheduler {brief(scheduler)} has the workers it was started with")
    if port is not None and (name != "dask" or scheduler):
        raise UserError(f"port {port}: only for the local cluster the dask executor starts (no scheduler given)")
    if name == "auto" and workers is not None:
        name = "local"  # asking for workers asks for the pool
    name = resolved(name, runner)
    if name == "inline":
        return InlineExecutor()
    if name == "local":
        return LocalExecutor(workers)
    if name == "timing":
        return TimingExecutor()
    if name == "dask":
        from engine.execution.dask_executor import DaskExecutor

        return DaskExecutor(scheduler=scheduler, workers=workers, port=port)
    raise UserError(f"executor {brief(name)} is not one of {', '.join(EXECUTORS)}")
