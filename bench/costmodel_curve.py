"""Learning curves of the cost models against data size (issue 34, item 2): does the GNN's gap to the trees close
as programs are added?

The programs are split into ``--folds`` program-grouped folds once (seed 0). For each fold, each model is trained on
a share of the other folds' programs (the same nested random subset for every model: 25% ⊂ 50% ⊂ 100% by default)
and scored on the whole held-out fold, so every point of a curve is tested on the same programs. Reported per model
and share: programs trained on, mean MAPE (absolute task) or mean τ and median top-1 slowdown (ranking tasks), each
the mean over folds with its spread across folds.

Usage: python bench/costmodel_curve.py --data FOLDER [--models gnn,gbdt] [--shares 0.25,0.5,1] [--folds 5]
  [--params JSON] [--programs N] [--run-folds 0,1]
  (--params: GNN hyper-parameters; --programs: the folder's first N programs in name order; --run-folds: only these
  of the folds, e.g. to run a curve's folds in two processes, one per core; each prints its rows as CSV, and
  --merge A.csv,B.csv prints the table of rows written before)
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from engine.surrogates._torch import torch
from engine.surrogates.costmodel.evaluate import fit_model, make_model
from engine.surrogates.costmodel.metrics import score_table, summary
from engine.surrogates.costmodel.readers import read_folder
from engine.surrogates.costmodel.splits import first_programs, group_folds
from engine.surrogates.difftune.measure import cpu_identity


def nested_programs(programs: list[str], shares: list[float], seed: int) -> dict[float, set[str]]:
    """Each share's programs, a prefix of one shuffled order, so that a smaller share is inside every larger one."""
    order = list(np.random.default_rng(seed).permutation(sorted(set(programs))))
    return {share: set(order[:max(1, round(share * len(order)))]) for share in shares}


def curve_rows(args: argparse.Namespace) -> pd.DataFrame:
    """One row per (fold, share, model): programs trained on, the held-out figures and the CPU seconds."""
    graphs = read_folder(args.data)
    graphs = graphs if args.programs is None else first_programs(graphs, args.programs)
    shares = [float(s) for s in args.shares.split(",")]
    identity = cpu_identity()
    absolute = graphs[0].task == "absolute"
    print(f"CPU {identity.model_name} ({identity.short_id}), torch {torch.__version__}; {len(graphs)} graphs of "
          f"{len({g.program for g in graphs})} programs from {args.data}; {args.folds} folds, shares {shares}")
    folds = group_folds(graphs, args.folds, args.seed)
    run = range(len(folds)) if args.run_folds is None else [int(f) for f in args.run_folds.split(",")]
    if any(not 0 <= fold < len(folds) for fold in run):
        raise SystemExit(f"--run-folds: {args.run_folds!r} names a fold outside 0–{len(folds) - 1}")
    rows = []
    for fold in run:
        train, test = folds[fold]
        held_out = [graphs[i] for i in test]
        subsets = nested_programs([graphs[i].program for i in train], shares, args.seed + fold)
        for share, programs in subsets.items():
            training = [graphs[i] for i in train if graphs[i].program in programs]
            for name in args.models.split(","):
                started = time.process_time()
                model = fit_model(name, make_model(name, args.seed, json.loads(args.params) if name == "gnn" else None),
                                  training, args.seed)
                overall = summary(score_table(held_out, [model.predict(g) for g in held_out])).loc["overall"]
                rows.append({"model": name, "share": share, "fold": fold, "programs": len(programs),
                             "mape": overall["mape_mean"], "tau": overall["tau_mean"],
                             "slowdown_1": overall["slowdown_1_median"], "cpu_s": time.process_time() - started})
                print(f"fold {fold}, {share:.0%} ({len(programs)} programs), {name}: "
                      + (f"MAPE {overall['mape_mean']:.3f}" if absolute else f"tau {overall['tau_mean']:.3f}"), flush=True)
    return pd.DataFrame(rows)


def curve_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model and share: programs trained on, CPU seconds, and each figure's mean and spread over the folds."""
    figures = ["mape"] if frame["tau"].isna().all() else ["tau", "slowdown_1"]
    return frame.groupby(["model", "share"]).agg(programs=("programs", "mean"), folds=("fold", "nunique"),
                                                 cpu_s=("cpu_s", "sum"), **{f"{f}_mean": (f, "mean") for f in figures},
                                                 **{f"{f}_sd": (f, "std") for f in figures})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a folder of .npz graphs (e.g. data/costmodel/absolute)")
    parser.add_argument("--models", default="gnn,gbdt")
    parser.add_argument("--shares", default="0.25,0.5,1")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", default="{}", help="JSON hyper-parameters of the GNN")
    parser.add_argument("--programs", type=int, help="only the first N programs of the folder, in name order")
    parser.add_argument("--run-folds", help="comma-separated fold numbers to run (default: every fold)")
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    parser.add_argument("--merge", help="comma-separated CSV files of earlier runs: print their table, run nothing")
    args = parser.parse_args()
    if args.merge:
        frame = pd.concat([pd.read_csv(file) for file in args.merge.split(",")], ignore_index=True)
    elif args.data:
        frame = curve_rows(args)
        if args.csv:
            frame.to_csv(args.csv, index=False)
    else:
        parser.error("--data or --merge is required")
    print(curve_table(frame).to_string(float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
