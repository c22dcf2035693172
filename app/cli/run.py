"""``tunelab run``: measure a study's design, committing each result the moment it arrives.

Killing the command loses at most the measurements in flight; running it again resumes where it
stopped and re-measures nothing already stored (repeats continue their numbering).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from app.cli._common import MAX_RUNS, MAX_SEED, MAX_WORKERS, add_json, bounded, open_store
from app.cli._output import emit

if TYPE_CHECKING:
    from engine.runners.base import MeasureResult


def add_executor(parser: argparse.ArgumentParser, choices: tuple[str, ...] | None = None) -> None:
    from engine.execution.registry import EXECUTORS

    choices = choices or tuple(EXECUTORS)
    parser.add_argument("--executor", choices=choices, default="auto",
                        help="; ".join(f"{name}: {EXECUTORS[name]}" for name in choices))
    parser.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: a local cluster)")
    parser.add_argument("--workers", type=int, action=bounded(1, MAX_WORKERS), help="worker processes (local pool or local Dask cluster)")
    parser.add_argument("--cluster-port", type=int, action=bounded(1, 65535),
                        help="scheduler port of the local Dask cluster, on 127.0.0.1 (default: a free one)")


def check_executor_args(args: argparse.Namespace) -> None:
    """Refuse contradictory executor flags before anything is opened or started."""
    if args.scheduler and args.executor != "dask":
        raise ValueError(f"--scheduler {args.scheduler}: only used with --executor dask")
    if args.scheduler and args.workers is not None:
        raise ValueError(f"--workers {args.workers}: a cluster at --scheduler has the workers it was started with; "
                         "start more there (dask worker ADDRESS --nthreads 1)")
    if args.cluster_port is not None and (args.executor != "dask" or args.scheduler):
        raise ValueError(f"--cluster-port {args.cluster_port}: only for the local cluster of --executor dask "
                         "(without --scheduler)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="measure a study's pending design rows, committing each result as it arrives")
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--design", type=int, action=bounded(1, MAX_SEED), help="design id (default: the latest design with pending rows)")
    add_executor(p)
    p.add_argument("--repeats", type=int, action=bounded(1, MAX_RUNS), help="repeats per configuration (default: the runner's)")
    add_json(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from engine.space.configs import config_key
    from workflows import StudySession

    check_executor_args(args)
    with open_store(args) as store:
        session = StudySession(store, args.study)
        space = session.spec.space

        def echo(config: dict[str, Any], result: MeasureResult) -> None:
            shown = "" if result.value is None else f" {result.value:.6g}"
            error = f" ({result.error.splitlines()[0][:160]})" if result.error else ""
            requeued = result.metadata.get("requeued")
            again = f" (re-queued {requeued}x: a worker holding it died)" if requeued else ""
            print(f"committed {config_key(space, config)} repeat {result.repeat}: {result.status}{shown}{error}{again}",
                  flush=True)

        measured = session.measure(args.design, executor=args.executor, workers=args.workers, scheduler=args.scheduler,
                                   port=args.cluster_port, repeats=args.repeats, echo=None if args.json else echo)
    progress = measured.progress
    summary = {"study": args.study, "design": measured.design_id, "executor": args.executor, "runner": measured.runner,
               **progress.to_dict()}
    emit(summary, args.json,
         f"design {measured.design_id} of '{args.study}': {progress.completed - progress.skipped} configurations "
         f"measured ({progress.results} results: {progress.ok} ok, {progress.not_ok} not ok), {progress.skipped} "
         f"already stored; {progress.elapsed_s:.1f} s")
    return 0
