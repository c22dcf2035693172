"""``tunelab difftune train`` and ``tunelab difftune experiment``: DiffTune's surrogate, then parameter learning
against a truth, with every baseline, stored."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from app.cli._common import MAX_COUNT, add_json, bounded, open_store
from app.cli._output import emit

MAX_EPOCHS = 100_000
#: numpy's ``RandomState`` (the split, the batch order, the random start) takes seeds up to this.
MAX_NUMPY_SEED = 2**32 - 1


def _needs_torch() -> None:
    """One line, not a traceback, where the runtime was installed without the surrogate's PyTorch."""
    from importlib.util import find_spec

    from engine.errors import UserError

    if find_spec("torch") is None:
        raise UserError("torch: DiffTune's surrogate needs PyTorch 2.13 (CPU wheel), which this environment lacks; "
                        "make run and make test install it")


def register_learning(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = actions.add_parser("train", help="train DiffTune's surrogate on a simulated data set; a rerun continues")
    p.add_argument("--dataset", required=True, help="simulated data set (tunelab difftune dataset)")
    p.add_argument("--name", help="surrogate name (default: DATASET-hHIDDEN)")
    p.add_argument("--epochs", type=int, default=6, action=bounded(1, MAX_EPOCHS), help="epochs in all (6 in DiffTune)")
    p.add_argument("--embedding", type=int, default=64, action=bounded(1, 4096), help="token embedding size")
    p.add_argument("--hidden", type=int, default=64, action=bounded(1, 4096), help="LSTM width (DiffTune: 256)")
    p.add_argument("--layers", type=int, default=2, action=bounded(1, 16), help="LSTM layers (DiffTune: 4)")
    p.add_argument("--batch", type=int, default=256, action=bounded(1, MAX_COUNT), help="samples per step")
    p.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_NUMPY_SEED), help="network and batch order seed")
    p.add_argument("--max-minutes", type=float, help="stop after the epoch that would overrun this (rerun to continue)")
    p.add_argument("--no-bound", action="store_true", help="DiffTune's own head: no throughput bound under the "
                                                           "prediction (the bound is the default: far lower MAPE)")
    p.add_argument("--device", default="cpu", help="where to train: cpu, or cuda for a GPU (DiffTune's full size: "
                                                   "--embedding 256 --hidden 256 --layers 4)")
    add_json(p)
    p.set_defaults(func=_train)

    e = actions.add_parser("experiment", help="learn a table with a trained surrogate against a truth and score every "
                                              "baseline on the test blocks (recovery, cross-arch, this-cpu)")
    e.add_argument("kind", choices=("recovery", "cross-arch", "this-cpu"))
    e.add_argument("--surrogate", required=True, help="trained surrogate (tunelab difftune train)")
    e.add_argument("--arch", help="cross-arch: the truth's -mcpu (default skylake); this-cpu: the measured CPU's -mcpu "
                                  "(default: this machine's, when it measured them)")
    e.add_argument("--measured", help="this-cpu: a tunelab blocks export CSV (default: this CPU's stored blocks)")
    e.add_argument("--budget", type=int, action=bounded(1, 10**10),
                   help="simulator calls (one block simulated under one table) for greedy search and the strategies; "
                        "at least the training blocks (default: the data set's size, DiffTune's cost)")
    e.add_argument("--strategies", default="RS,BO", help="Tunelab strategies calibrating a parameter subset")
    e.add_argument("--epochs", type=int, action=bounded(1, MAX_EPOCHS), help="parameter-learning epochs (default: ~1,000 steps)")
    e.add_argument("--lr", type=float, default=0.05, help="parameter-learning rate (DiffTune: 0.05)")
    e.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_NUMPY_SEED), help="random start and search seed")
    add_json(e)
    e.set_defaults(func=_experiment)

    c = actions.add_parser("calibration", help="an experiment's calibration over a few parameters, evaluated on its "
                                               "whole grid and stored as a table study (replay strategies in Compare)")
    c.add_argument("kind", choices=("recovery", "cross-arch", "this-cpu"))
    c.add_argument("--surrogate", required=True, help="the surrogate whose data set and split give the blocks")
    c.add_argument("--name", required=True, help="name of the table study to create")
    c.add_argument("--parameters", help="comma-separated: dispatch_width, rob_size, latency:KEY, uops:KEY, "
                                        "port:KEY:RESOURCE (default: the globals, latency and µops of the most "
                                        "common opcode)")
    c.add_argument("--start", help="the start table the other parameters keep (default: the experiment's first)")
    c.add_argument("--arch", help="as for experiment")
    c.add_argument("--measured", help="as for experiment")
    c.add_argument("--blocks", type=int, default=500, action=bounded(10, MAX_COUNT),
                   help="training blocks each configuration simulates")
    c.add_argument("--seed", type=int, default=0, action=bounded(0, MAX_NUMPY_SEED), help="the random start's seed")
    add_json(c)
    c.set_defaults(func=_calibration)


def _train(args: argparse.Namespace) -> int:
    _needs_torch()
    from engine.errors import UserError
    from engine.surrogates.difftune.train import TrainConfig
    from workflows.difftune.surrogate import train_surrogate

    if args.max_minutes is not None and not args.max_minutes > 0:
        raise UserError(f"--max-minutes: must be positive, got {args.max_minutes}")
    shown = not args.json and sys.stderr.isatty()

    def progress(step: dict[str, Any]) -> None:
        if step["step"] % 20 == 0 or step["step"] == step["batches"]:
            print(f"\repoch {step['epoch']} step {step['step']:,}: loss {step['loss']:.4f}, EMA {step['ema']:.4f}",
                  end="", file=sys.stderr, flush=True)

    config = TrainConfig(embedding=args.embedding, hidden=args.hidden, layers=args.layers, batch=args.batch, seed=args.seed,
                         bound=not args.no_bound)
    with open_store(args) as store:
        result = train_surrogate(store, dataset_name=args.dataset, name=args.name, epochs=args.epochs, config=config,
                                 max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
                                 on_step=progress if shown else None, device=args.device)
    if shown:
        print(file=sys.stderr)
    scores = ", ".join(f"{label} MAPE {value:.2%}" for label, value in
                       (("validation", result.val_mape), ("test", result.test_mape)) if value is not None)
    emit(result.to_dict(), args.json,
         f"surrogate '{result.name}' on '{result.dataset}' ({result.samples:,} samples): {result.epochs_done} epochs"
         f"{', ' + scores if scores else ''}; {result.seconds:.0f} s this run; checkpoints in {result.folder}")
    return 0


def _experiment(args: argparse.Namespace) -> int:
    _needs_torch()
    from engine.strategies.registry import parse_names

    strategies = tuple(parse_names(args.strategies))  # before the heavy imports: a typo is refused at once
    from workflows.difftune.experiments import run

    def progress(stage: str) -> None:
        print(stage, file=sys.stderr, flush=True)

    with open_store(args) as store:
        result = run(store, args.kind, args.surrogate, arch=args.arch, measured=args.measured, budget=args.budget,
                     strategies=strategies, learn_epochs=args.epochs, lr=args.lr,
                     seed=args.seed, progress=None if args.json else progress)
    accuracy = result.accuracy.sort_values("mape")
    shown = accuracy.assign(mape=accuracy["mape"].map("{:.2%}".format), median_ape=accuracy["median_ape"].map("{:.2%}".format),
                            within_5pct=accuracy["within_5pct"].map("{:.1%}".format),
                            kendall_tau=accuracy["kendall_tau"].map("{:.3f}".format))
    text = [f"experiment {result.id} ({result.kind}): truth = {result.truth}; {result.blocks['train']:,} training and "
            f"{result.blocks['test']:,} test blocks; {result.seconds:.0f} s", shown.to_string(index=False),
            "simulator calls: " + ", ".join(f"{k} {v:,}" for k, v in result.costs.items())]
    if result.recovery is not None:
        text.append("parameter recovery (mean absolute error per field):\n" + result.recovery.round(3).to_string(index=False))
    text.append("tables stored: " + ", ".join(result.tables.values()))
    emit({"experiment": result.id, "kind": result.kind, "evaluation": result.evaluation_id, "truth": result.truth,
          "blocks": result.blocks, "accuracy": result.accuracy, "recovery": result.recovery, "costs": result.costs,
          "tables": result.tables, "seconds": result.seconds}, args.json, "\n".join(text))
    return 0


def _calibration(args: argparse.Namespace) -> int:
    from workflows.difftune.experiments import calibration_study

    parameters = [p.strip() for p in args.parameters.split(",") if p.strip()] if args.parameters else None
    with open_store(args) as store:
        result = calibration_study(store, args.kind, args.surrogate, name=args.name, parameters=parameters,
                                   start=args.start, arch=args.arch, measured=args.measured, blocks=args.blocks,
                                   seed=args.seed)
    emit(asdict(result), args.json,
         f"table study '{result.name}': {result.configurations:,} configurations of {', '.join(result.parameters)} "
         f"on {result.blocks:,} training blocks (truth: {result.truth}); MAPE {result.start_mape:.2%} at the start, "
         f"{result.best_mape:.2%} at the grid's best. Compare it: tunelab bench --table '{result.name}' or the "
         "Compare page")
    return 0
