"""``tunelab tune``: run a search strategy on a study headless; every measurement is stored as it arrives.

    tunelab tune --study NAME --strategy DLMT --budget 60 --auto [--json]

Prints the best configuration, its value and the budget used. DLMT's decisions are logged to the
store. ``--auto`` accepts each one; without it the run stops at each step's proposal, which a person
accepts, edits or rejects on the Analyze page or with ``tunelab decide``; the same ``tunelab tune``
command then resumes the run (engine.execution.review).
"""

from __future__ import annotations

import argparse

from app.cli._common import MAX_COUNT, MAX_SEED, add_json, bounded, open_store
from app.cli._output import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="run a search strategy (DLMT, RS, BO, ...) on a study with its runner")
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--strategy", default="DLMT", help="strategy name (default %(default)s)")
    p.add_argument("--budget", type=int, required=True, action=bounded(1, MAX_COUNT), help="most configurations to measure")
    p.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_SEED), help="random seed (default %(default)s)")
    p.add_argument("--options", metavar="JSON", help='strategy options, e.g. \'{"threshold": 0.01}\'')
    p.add_argument("--auto", action="store_true",
                   help="accept every DLMT decision automatically (without it: stop at each one for a person)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli._options import check_strategy_options, parse_json
    from engine.execution import Campaign, review
    from engine.execution.tuning import candidates_for, stored_results, tune
    from engine.runners import runner_from_spec
    from engine.strategies import Domain, make_strategy, options_of

    options = check_strategy_options(args.strategy, parse_json(args.options))
    if "auto" in options_of(args.strategy):
        options["auto"] = bool(args.auto)
    run_id = review.run_key(args.strategy, args.seed, args.budget, options)
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
            if decision.by == "auto" and review.taken(store.decisions(study.name), run_id, step)[0] is None:
                store.log_decision(study, **review.log_entry(run_id, decision, step))

        def ask_person(proposal, step):
            answer, logged = review.taken(store.decisions(study.name), run_id, step)
            if answer is None and not logged:
                store.log_decision(study, **review.log_entry(run_id, proposal, step))
            return answer

        stored = stored_results(store.measurements(args.study), spec.space.names)
        result = tune(strategy, Campaign(runner, space=spec.space), record, log, stored=stored, review=ask_person)
    data = {"study": args.study, "strategy": strategy.name, "objective": spec.objective, **result.to_dict()}
    waiting = strategy.pending_decision
    if waiting is not None:
        data["pending"] = {"step": strategy.step, "proposed": waiting.proposed, "explanation": list(waiting.explanation)}
    if result.best is None:
        text = f"{strategy.name} on '{args.study}': no successful measurement in {result.used} of {args.budget}"
    else:
        config = ", ".join(f"{k}={v}" for k, v in result.best["config"].items())
        text = (f"best {spec.objective} = {result.best['value']:.6g} at {config}\n"
                f"budget used {result.used} of {args.budget} ({result.measurements} measurements stored, "
                f"{result.decisions} decisions logged)")
    if waiting is not None:
        text += (f"\nstep {strategy.step} waits for your decision:\n" + "\n".join(f"  - {line}" for line in waiting.explanation)
                 + f"\naccept, edit or reject it on the Analyze page or with `tunelab decide --study \"{args.study}\" "
                 "accept|edit|reject`, then run this command again to go on")
    emit(data, args.json, text)
    return 0
