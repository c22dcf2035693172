"""The cost model as a tuner's pre-filter (issues 15 and 34): measurements needed to get within 5% of a program's
best configuration, PF (the GNN) against PF-GBDT (the same pre-filter ranked by gradient-boosted trees), RS, BO and
DLMT, on programs of the generated tile or joint task the models never saw.

The GNN (default settings) and the trees are trained on the other folds' programs; each held-out program's
measured table is replayed ``--reps`` times per strategy (``engine.compare``: one measurement = one distinct
configuration, the budget is every configuration of the program); PF and PF-GBDT ``--pf-reps`` times, as without
exploration their runs are identical. A run that never gets within the threshold counts the whole table plus
one. Per program, the median over repetitions; reported: the median and mean over programs, and the ratios to PF.

Usage: python bench/prefilter.py [--data FOLDER] [--fold 0] [--folds 5] [--reps 50] [--strategies RS,BO,DLMT,PF,PF-GBDT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from engine.compare.replay import BenchTable
from engine.compare.run import run_benchmark
from engine.io.paths import REPO_ROOT
from engine.surrogates._torch import torch
from engine.surrogates.costmodel.evaluate import fit_model, make_model
from engine.surrogates.costmodel.readers import read_graph
from engine.surrogates.costmodel.splits import group_folds
from engine.surrogates.costmodel.tables import graph_table
from engine.surrogates.difftune.measure import cpu_identity


def measurements_to(trace: list[float], threshold: float) -> int:
    """Measurements until the best found is within ``threshold`` of the optimum (len + 1 when never)."""
    hit = np.flatnonzero(np.asarray(trace, dtype=float) <= threshold)
    return int(hit[0]) + 1 if len(hit) else len(trace) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO_ROOT / "data" / "costmodel" / "tile"),
                        help="folder of generated tile .npz files (default: the committed ones)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fold", type=int, default=0, help="which fold's programs are held out")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--strategies", default="RS,BO,DLMT,PF,PF-GBDT")
    parser.add_argument("--threshold", type=float, default=1.05)
    parser.add_argument("--refit", type=int, default=10)
    parser.add_argument("--pf-reps", type=int, default=3, help="PF and PF-GBDT repetitions (identical without exploration)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", default="{}", help='JSON hyper-parameters of the GNN, e.g. {"hidden": 128}')
    parser.add_argument("--out", help="write the per-program medians here (JSON)")
    args = parser.parse_args()
    paths = sorted(Path(args.data).glob("*.npz"))
    graphs = [read_graph(p) for p in paths]
    train, test = group_folds(graphs, args.folds, args.seed)[args.fold]
    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}), torch {torch.__version__}; {len(graphs)} programs, "
          f"{len(train)} to train on, {len(test)} held out; {args.reps} reps; within {args.threshold:g}× of the best")
    started = time.process_time()
    model = fit_model("gnn", make_model("gnn", args.seed, json.loads(args.params)), [graphs[i] for i in train], args.seed)
    print(f"GNN trained in {(time.process_time() - started) / 60:.2f} CPU minutes")
    strategies = args.strategies.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        model_file = Path(folder) / "model.pt"
        model.save(model_file)
        train_folder = Path(folder) / "train"
        train_folder.mkdir()
        for i in train:
            (train_folder / paths[i].name).symlink_to(paths[i].resolve())
        for n, i in enumerate(test):
            spec, table = graph_table(graphs[i], paths[i].stem)
            bench = BenchTable(spec, table, source=paths[i].name)
            size = len(table)
            rankers = {"PF": {"model": str(model_file)}, "PF-GBDT": {"ranker": "gbdt", "train": str(train_folder)}}
            others = [s for s in strategies if s not in rankers]
            replays = [run_benchmark(bench, others, reps=args.reps, budget=size, seed=args.seed).runs] if others else []
            for name in [s for s in strategies if s in rankers]:  # without exploration a pre-filter repeats itself
                options = {"PF": {**rankers[name], "graph": str(paths[i]), "refit": args.refit}}
                runs = run_benchmark(bench, ["PF"], reps=args.pf_reps, budget=size, seed=args.seed, options=options).runs
                assert runs["trace"].map(tuple).nunique() == 1, f"{name} without exploration should repeat itself"
                replays.append(runs.assign(strategy=name))
            for name, runs in pd.concat(replays).groupby("strategy"):
                needed = [measurements_to(t, args.threshold) for t in runs["trace"]]
                rows.append({"program": paths[i].stem, "configurations": size, "strategy": name,
                             "median": float(np.median(needed)), "mean": float(np.mean(needed))})
            print(f"\r{n + 1}/{len(test)} programs", end="", flush=True)
    print()
    frame = pd.DataFrame(rows)
    per = frame.pivot(index="program", columns="strategy", values="median")[strategies]
    summary = pd.DataFrame({"median over programs": per.median(), "mean over programs": per.mean()})
    if "PF" in per:
        summary["mean ratio to PF"] = per.mean() / per["PF"].mean()
    print(summary.to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"configurations per program: median {frame.groupby('program')['configurations'].first().median():.0f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary.reset_index().to_dict("records"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
