"""``tunelab run``: measure a study's design, committing each result the moment it arrives.

Killing the command loses at most the measurements in flight; running it again resumes where it
stopped and re-measures nothing already stored (repeats continue their numbering).
"""

from __future__ import annotations

import argparse

from app.cli._common import MAX_RUNS, MAX_SEED, MAX_WORKERS, add_json, bounded, open_store
from app.cli._output import emit

EXECUTOR_CHOICES = ("local", "timing", "dask", "inline")


def add_executor(parser: argparse.ArgumentParser, choices: tuple[str, ...] = EXECUTOR_CHOICES) -> None:
    parser.add_argument("--executor", choices=choices, default="local",
                        help="local: process pool; timing: one worker pinned to a core, serial; dask: a Dask cluster; "
                             "inline: in this process")
    parser.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: a local cluster)")
    parser.add_argument("--workers", type=int, action=bounded(1, MAX_WORKERS), help="worker processes (local pool or local Dask cluster)")


def check_executor_args(args: argparse.Namespace) -> None:
    """Refuse contradictory executor flags before anything is opened or started."""
    if args.scheduler and args.executor != "dask":
        raise ValueError(f"--scheduler {args.scheduler}: only used with --executor dask")


def make_executor(args: argparse.Namespace):
    from engine.execution import executor_from_name

    check_executor_args(args)
    return executor_from_name(args.executor, workers=args.workers, scheduler=args.scheduler)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="measure a study's pending design rows, committing each result as it arrives")
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--design", type=int, action=bounded(1, MAX_SEED), help="design id (default: the latest design with pending rows)")
    add_executor(p)
    p.add_argument("--repeats", type=int, action=bounded(1, MAX_RUNS), help="repeats per configuration (default: the runner's)")
    add_json(p)
    p.set_defaults(func=_run)


def _pick_design(designs, requested: int | None, study: str) -> int:
    if designs.empty:
        raise ValueError(f"study '{study}': no design to run yet; create one first (tunelab design ...)")
    if requested is not None:
        if requested not in set(designs["id"].tolist()):
            raise ValueError(f"--design {requested}: not a design of study '{study}' "
                             f"(designs: {', '.join(map(str, designs['id'].tolist()))})")
        return requested
    pending = designs[designs["pending"] > 0]
    return int((pending if len(pending) else designs)["id"].max())


def _run(args) -> int:
    from engine.execution import Campaign, store_recorder, stored_repeats
    from engine.runners import runner_from_spec
    from engine.space.configs import config_key

    check_executor_args(args)
    with open_store(args) as store:
        study = store.get_study(args.study)
        spec, space = study.spec, study.spec.space
        design_id = _pick_design(store.designs(args.study), args.design, args.study)
        rows = store.design_rows(args.study, design_id)
        table = store.study_table(args.study) if spec.runner.get("kind") == "table" else None
        runner = runner_from_spec(spec.runner, space=space, table=table)

        def echo(config, result) -> None:
            shown = "" if result.value is None else f" {result.value:.6g}"
            error = f" ({result.error.splitlines()[0][:160]})" if result.error else ""
            print(f"committed {config_key(space, config)} repeat {result.repeat}: {result.status}{shown}{error}", flush=True)

        on_result = store_recorder(store, study, design_id=design_id, strategy="design", echo=None if args.json else echo)
        with make_executor(args) as executor:
            campaign = Campaign(runner, executor, repeats=args.repeats, space=space)
            progress = campaign.run(rows, on_result, done=stored_repeats(space, store.measurements(args.study)))
    summary = {"study": args.study, "design": design_id, "executor": args.executor, "runner": runner.describe(),
               **progress.to_dict()}
    emit(summary, args.json,
         f"design {design_id} of '{args.study}': {progress.completed - progress.skipped} configurations measured "
         f"({progress.results} results: {progress.ok} ok, {progress.not_ok} not ok), {progress.skipped} already stored; "
         f"{progress.elapsed_s:.1f} s")
    return 0
