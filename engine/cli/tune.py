"""``tunelab tune``: run a search strategy on a study headless; every measurement is stored as it arrives.

    tunelab tune --study NAME --strategy DLMT --budget 60 --auto [--json]

Prints the best configuration, its value and the budget used. DLMT's decisions are logged to the
store (``--auto`` accepts each one; reviewing them by hand happens on the Analyze page).
"""

from __future__ import annotations

import argparse

from engine.cli._common import add_json, open_store
from engine.cli._output import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="run a search strategy (DLMT, RS, BO, ...) on a study with its runner")
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--strategy", default="DLMT", help="strategy name (default %(default)s)")
    p.add_argument("--budget", type=int, required=True, help="most configurations to measure")
    p.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    p.add_argument("--options", metavar="JSON", help='strategy options, e.g. \'{"threshold": 0.01}\'')
    p.add_argument("--auto", action="store_true", help="accept every DLMT decision automatically")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from engine.errors import UserError
    from engine.execution import Campaign
    from engine.runners import runner_from_spec
    from engine.strategies import Domain, make_strategy, options_of
    from engine.strategies.tuning import candidates_for, tune

    try:
        options = json.loads(args.options) if args.options else {}
    except json.JSONDecodeError as exc:
        raise UserError(f"--options: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(options, dict):
        raise UserError('--options: expected a JSON object such as {"threshold": 0.01}')
    if "auto" in options_of(args.strategy):
        if not args.auto:
            raise UserError(f"tune --strategy {args.strategy}: pass --auto (decisions are reviewed by hand on the Analyze page)")
        options["auto"] = True
    with open_store(args) as store:
        study = store.get_study(args.study)
        spec = study.spec
        table = store.study_table(args.study) if spec.runner.get("kind") == "table" else None
        runner = runner_from_spec(spec.runner, space=spec.space, table=table)
        domain = Domain(spec.space, candidates_for(spec, table))
        if "response" in options_of(args.strategy):
            options.setdefault("response", spec.objective)
        strategy = make_strategy(args.strategy, domain, args.budget, args.seed, spec.direction, options)

        def record(config, result, name, step):
            store.record_measurement(study, config, result.value, result.status, error=result.error,
                                     repeat=result.repeat, host=result.host, started_at=result.started_at,
                                     finished_at=result.finished_at, strategy=name, step=step,
                                     metadata=result.metadata)

        def log(decision, step):
            record_ = decision.to_record()
            store.log_decision(study, kind=f"{strategy.name.lower()}-step", proposed=record_["proposed"],
                               chosen=record_["chosen"], outcome="auto" if decision.by == "auto" else decision.status,
                               actor=decision.by or "auto", explanation="\n".join(decision.explanation),
                               evidence=record_, step=step)

        result = tune(strategy, Campaign(runner, space=spec.space), record, log)
    data = {"study": args.study, "strategy": strategy.name, "objective": spec.objective, **result.to_dict()}
    if result.best is None:
        text = f"{strategy.name} on '{args.study}': no successful measurement in {result.used} of {args.budget}"
    else:
        config = ", ".join(f"{k}={v}" for k, v in result.best["config"].items())
        text = (f"best {spec.objective} = {result.best['value']:.6g} at {config}\n"
                f"budget used {result.used} of {args.budget} ({result.measurements} measurements stored, "
                f"{result.decisions} decisions logged)")
    emit(data, args.json, text)
    return 0
