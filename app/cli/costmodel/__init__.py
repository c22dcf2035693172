"""``tunelab costmodel``: the tensor-program cost model (Kaufman et al.): cross-validate the GNN beside its
baselines on program-grouped folds, and train one model on a whole data set."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from app.cli._common import add_json, bounded, open_store
from app.cli._output import emit
from app.cli.costmodel.generate import register_generate

MODELS = "gnn,gbdt,heuristic,default"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("costmodel", help="the tensor-program cost model: evaluate models side by side, train one")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    e = actions.add_parser("evaluate", help="program-grouped cross-validation of models on the same folds, stored")
    e.add_argument("--data", default="tpu-tiles", help="tpu-tiles or tpu-layout (real TPU data), cpu-tile, cpu-joint, cpu-large or cpu-absolute "
                                                        "(generated on CPU, committed) or a folder of .npz graphs")
    e.add_argument("--models", default=MODELS, help=f"comma-separated (default {MODELS}; roofline for absolute data)")
    e.add_argument("--folds", type=int, default=5, action=bounded(2, 1000), help="folds (capped at the programs)")
    e.add_argument("--seeds", default="0,1,2", help="comma-separated seeds: each reshuffles the folds and the models")
    e.add_argument("--params", help='JSON: {"gnn": {"hidden": 64, "join": "late"}, "gbdt": {"max_iter": 100}}')
    e.add_argument("--name", help="stored name (default: DATA and the time)")
    add_json(e)
    e.set_defaults(func=_evaluate)
    t = actions.add_parser("train", help="train the GNN on a whole data set and keep it beside the database")
    t.add_argument("--data", default="tpu-tiles", help="tpu-tiles, cpu-tile, cpu-joint, cpu-large, cpu-absolute or a folder of .npz graphs")
    t.add_argument("--name", required=True, help="model name (a folder name)")
    t.add_argument("--params", help='JSON hyper-parameters of the GNN, e.g. {"hidden": 64, "epochs": 50}')
    t.add_argument("--seed", type=int, default=0, action=bounded(0, 2**31 - 1))
    add_json(t)
    t.set_defaults(func=_train)
    s = actions.add_parser("study", help="a tile graph file's measured configurations as a table study (for bench, Compare, PF)")
    s.add_argument("graph", help="a tile .npz graph file (e.g. one of data/costmodel/tile)")
    s.add_argument("--name", required=True, help="study name")
    s.add_argument("--model", help="a trained cost model: print the tunelab bench line that runs PF with it")
    add_json(s)
    s.set_defaults(func=_study)
    register_generate(actions)


def _params(text: str | None, nested: bool) -> dict[str, Any]:
    from app.cli._options import parse_json
    from engine.errors import UserError

    value = parse_json(text)
    if not isinstance(value, dict) or (nested and not all(isinstance(v, dict) for v in value.values())):
        shape = '{"MODEL": {"option": value}}' if nested else '{"option": value}'
        raise UserError(f"--params: expected {shape}, got {text}")
    return value


def _seeds(text: str) -> list[int]:
    from engine.errors import UserError

    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--seeds: comma-separated non-negative integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise UserError(f"--seeds: comma-separated non-negative integers, got {text!r}")
    return seeds


def _evaluate(args: argparse.Namespace) -> int:
    params = _params(args.params, nested=True)
    seeds = _seeds(args.seeds)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    from engine.surrogates.costmodel.evaluate import noise_line
    from workflows.costmodel import evaluate

    progress = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    with open_store(args) as store:
        done = evaluate(store, args.data, models, folds=args.folds, seeds=seeds, params=params, name=args.name,
                        progress=progress)
    table = done.result.table
    noise = done.result.noise
    held_out = "whole programs held out" if done.result.protocol == "programs" else \
        "one program: its configurations split into folds"
    shown = table.dropna(axis=1, how="all")  # no τ or slowdown where a graph has one configuration, no APE for ranks
    text = [f"evaluation {done.id} on {args.data} ({held_out}): {args.folds} folds × seeds {seeds}, {done.seconds:.0f} s",
            *done.notes, shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"), noise_line(noise),
            "CPU seconds fitting and predicting: " + ", ".join(f"{k} {v:.1f}" for k, v in done.result.seconds.items())]
    emit({"evaluation": done.id, "protocol": done.result.protocol, "models": table, "noise": noise, "notes": done.notes,
          "seconds": done.result.seconds}, args.json, "\n".join(text))
    return 0


def _train(args: argparse.Namespace) -> int:
    params = _params(args.params, nested=False)
    from workflows.costmodel import train

    def on_epoch(epoch: int, loss: float, metric: float) -> None:
        print(f"epoch {epoch}: loss {loss:.4f}, validation {metric:.4f}", file=sys.stderr, flush=True)

    with open_store(args) as store:
        done = train(store, args.data, args.name, params=params, seed=args.seed, on_epoch=None if args.json else on_epoch)
    emit({**asdict(done), "folder": str(done.folder)}, args.json,
         "\n".join([*done.notes, f"cost model '{done.name}' trained on {done.graphs} graphs in {done.seconds / 60:.1f} "
                    f"CPU minutes; checkpoint in {done.folder}"]))
    return 0


def _study(args: argparse.Namespace) -> int:
    import json

    from workflows.costmodel import graph_study, model_file

    with open_store(args) as store:
        pf = {"model": str(model_file(store, args.model))} if args.model else None
        done = graph_study(store, args.graph, args.name)
    text = (f"table study '{done.name}': {done.configurations} configurations of {', '.join(done.factors)} "
            f"from {done.graph}; best {done.best:,.0f} ns")
    if pf is not None:
        pf["graph"] = done.graph
        text += ("\nreplay PF beside RS and BO: tunelab bench --table " + done.name + " --strategies RS,BO,PF --budget "
                 f"{done.configurations} --options '{json.dumps({'PF': pf})}'")
    emit({**asdict(done), "pf_options": pf}, args.json, text)
    return 0
