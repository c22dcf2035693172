"""``tunelab tune``: run a search strategy on a study headless; every measurement is stored as it arrives.

    tunelab tune --study NAME --strategy DLMT --budget 60 --auto [--executor local --workers 8] [--json]

With a parallel executor (a process pool, a Dask cluster) the strategy proposes as many configurations as the
workers take: a design's runs at once, and model-based picks made while others are measuring (each pending one
stands at the worst value measured so far, the constant liar; BO believes its GP there; TPE keeps it as a
running trial).

Prints the best configuration, its value, the budget used (in configurations) and the measurements
behind them: those taken now and those found stored. Running the same command again resumes a run
that was killed: nothing stored is measured again, and a configuration stored with only some of its
repeats gets the rest.

DLMT's decisions are logged to the store. ``--auto`` accepts each one; without it the run stops at
each step's proposal, which a person accepts, edits or rejects on the Analyze page or with
``tunelab decide``; the same ``tunelab tune`` command then resumes the run (engine.execution.review).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.cli._common import MAX_COUNT, MAX_SEED, add_json, bounded, open_store
from app.cli._output import emit
from app.cli.run import add_executor, check_executor_args

if TYPE_CHECKING:
    from workflows.session import Tuned


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tune", help="run a search strategy (DLMT, RS, BO, ...) on a study with its runner",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog_from=_options_help)
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--strategy", default="AUTO", help="strategy name (default %(default)s: DLMT while it finds better, then trees and local moves)")
    p.add_argument("--budget", type=int, required=True, action=bounded(1, MAX_COUNT), help="most configurations to measure")
    p.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_SEED), help="random seed (default %(default)s)")
    p.add_argument("--options", metavar="JSON", help='strategy options, e.g. \'{"threshold": 0.01}\'')
    p.add_argument("--auto", action="store_true",
                   help="accept every DLMT decision automatically (without it: stop at each one for a person)")
    add_executor(p)
    add_json(p)
    p.set_defaults(func=run)


def _options_help() -> str:
    from engine.strategies import help_text
    from engine.strategies.registry import STRATEGIES

    return ("Strategy options (--options JSON), from each strategy's options table:\n\n"
            + "\n\n".join(help_text(name) for name in STRATEGIES))


def run(args: argparse.Namespace) -> int:
    from app.cli._options import check_strategy_options, parse_json
    from workflows import StudySession

    check_executor_args(args)
    options = check_strategy_options(args.strategy, parse_json(args.options))
    with open_store(args) as store:
        session = StudySession(store, args.study)
        tuned = session.tune(args.strategy, args.budget, seed=args.seed, options=options, auto=args.auto,
                             executor=args.executor, workers=args.workers, scheduler=args.scheduler,
                             port=args.cluster_port)
    result, waiting, objective = tuned.result, tuned.waiting, session.spec.objective
    data = {"study": args.study, "strategy": tuned.strategy, "objective": objective, **result.to_dict()}
    if waiting is not None:
        data["pending"] = {"step": tuned.step, "proposed": waiting.proposed, "explanation": list(waiting.explanation)}
    used = f"{result.used} of {args.budget} configurations ({_measured(tuned)})"
    if result.best is None:
        text = f"{tuned.strategy} on '{args.study}': no successful measurement in {used}"
    else:
        config = ", ".join(f"{k}={v}" for k, v in result.best["config"].items())
        text = (f"best {objective} = {result.best['value']:.6g} at {config}\n"
                f"budget used {used}, {result.decisions} decisions logged")
    if waiting is not None:
        text += (f"\nstep {tuned.step} waits for your decision:\n" + "\n".join(f"  - {line}" for line in waiting.explanation)
                 + f"\naccept, edit or reject it on the Analyze page or with `tunelab decide --study \"{args.study}\" "
                 "accept|edit|reject`, then run this command again to go on")
    emit(data, args.json, text)
    return 0


def _measured(tuned: Tuned) -> str:
    """The measurements behind the budget used: taken now, found stored, configurations completed."""
    result = tuned.result
    text = (f"{result.measurements + result.reused} measurements: {result.measurements} new, "
            f"{result.reused} stored before")
    if result.completed:
        text += f"; {result.completed} partly measured configuration{'s' if result.completed > 1 else ''} completed"
    return text
