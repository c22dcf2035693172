"""The cost model as a tuner's pre-filter (issues 15 and 34): measurements needed to get within 5% of a program's
best configuration, PF (the GNN) against PF-GBDT (the same pre-filter ranked by gradient-boosted trees), RS, BO and
DLMT, on programs of the generated tile, joint or large task the models never saw.

For each fold of ``--folds`` (program-grouped), the GNN (default settings) and the trees are trained on the other
folds' programs; each held-out program's measured table is replayed ``--reps`` times per strategy
(``engine.compare``: one measurement = one distinct configuration, the budget is every configuration of the
program); PF and PF-GBDT ``--pf-reps`` times, as without exploration their runs are identical. A run stops once it
is within the threshold (what follows cannot change the count); one that never gets there counts the whole table
plus one. Per program, the median over repetitions (with runs of several ``--seed``s merged, the mean of those
medians); reported: the median and mean over programs, the ratios of means to PF with a bootstrap interval over
programs, and the share of configurations within the threshold.

Usage: python bench/prefilter.py [--data FOLDER] [--fold 0[,1,...]|all] [--folds 5] [--reps 50] [--strategies RS,BO,DLMT,PF,PF-GBDT]
       [--out F.json]; python bench/prefilter.py --merge A.json,B.json (folds run in two processes, one summary)
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
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


def ratio_interval(per: pd.DataFrame, name: str, seed: int, resamples: int = 2000) -> tuple[float, float]:
    """2.5–97.5% of mean(PF) ÷ mean(name) over ``resamples`` bootstrap resamples of the programs."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per), (resamples, len(per)))
    ratios = per["PF"].to_numpy()[picks].mean(axis=1) / per[name].to_numpy()[picks].mean(axis=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def run_fold(args: argparse.Namespace, paths: list[Path], graphs: list, train: Sequence[int], test: Sequence[int], strategies: list[str],
             folder: Path) -> list[dict]:
    """Train on ``train``, replay every strategy on each program of ``test``; one row per (program, strategy)."""
    started = time.process_time()
    model = fit_model("gnn", make_model("gnn", args.seed, json.loads(args.params)), [graphs[i] for i in train], args.seed)
    print(f"GNN trained on {len(train)} programs in {(time.process_time() - started) / 60:.2f} CPU minutes")
    model_file = folder / "model.pt"
    model.save(model_file)
    train_folder = folder / "train"
    shutil.rmtree(train_folder, ignore_errors=True)
    train_folder.mkdir()
    for i in train:
        (train_folder / paths[i].name).symlink_to(paths[i].resolve())
    rows = []
    for n, i in enumerate(test):
        spec, table = graph_table(graphs[i], paths[i].stem)
        bench = BenchTable(spec, table, source=paths[i].name)
        size = len(table)
        near = float(np.mean(table["value"] <= args.threshold * table["value"].min()))
        rankers = {"PF": {"model": str(model_file)}, "PF-GBDT": {"ranker": "gbdt", "train": str(train_folder)}}
        others = [s for s in strategies if s not in rankers]
        common = {"budget": size, "seed": args.seed, "stop_at": args.threshold}
        replays = [run_benchmark(bench, others, reps=args.reps, **common).runs] if others else []
        for name in [s for s in strategies if s in rankers]:  # without exploration a pre-filter repeats itself
            options = {"PF": {**rankers[name], "graph": str(paths[i]), "refit": args.refit}}
            runs = run_benchmark(bench, ["PF"], reps=args.pf_reps, options=options, **common).runs
            assert runs["trace"].map(tuple).nunique() == 1, f"{name} without exploration should repeat itself"
            replays.append(runs.assign(strategy=name))
        for name, runs in pd.concat(replays).groupby("strategy"):
            needed = [measurements_to(t, args.threshold) for t in runs["trace"]]
            rows.append({"program": paths[i].stem, "configurations": size, "near_share": near, "strategy": name,
                         "median": float(np.median(needed)), "mean": float(np.mean(needed)),
                         "never": int(sum(n > size for n in needed))})
        print(f"\r{n + 1}/{len(test)} programs", end="", flush=True)
    print()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO_ROOT / "data" / "costmodel" / "tile"),
                        help="folder of generated tile .npz files (default: the committed ones)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fold", default="0", help="which folds' programs are held out: comma-separated, or all")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--strategies", default="RS,BO,DLMT,PF,PF-GBDT")
    parser.add_argument("--threshold", type=float, default=1.05)
    parser.add_argument("--refit", type=int, default=10)
    parser.add_argument("--pf-reps", type=int, default=3, help="PF and PF-GBDT repetitions (identical without exploration)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", default="{}", help='JSON hyper-parameters of the GNN, e.g. {"hidden": 128}')
    parser.add_argument("--out", help="write the per-program medians here (JSON)")
    parser.add_argument("--merge", help="comma-separated --out files of earlier runs (e.g. folds run apart): their summary, run nothing")
    args = parser.parse_args()
    if args.merge:
        saved = [json.loads(Path(file).read_text()) for file in args.merge.split(",")]
        report(pd.DataFrame([row for run in saved for row in run["rows"]]), saved[0]["strategies"], args.threshold, args.seed)
        return
    folds = list(range(args.folds)) if args.fold == "all" else [int(f) for f in args.fold.split(",")]
    if not all(0 <= f < args.folds for f in folds):
        parser.error(f"--fold {args.fold}: folds run from 0 to {args.folds - 1}")
    paths = sorted(Path(args.data).glob("*.npz"))
    graphs = [read_graph(p) for p in paths]
    splits = group_folds(graphs, args.folds, args.seed)
    identity = cpu_identity()
    held = sum(len(splits[f][1]) for f in folds)
    print(f"CPU {identity.model_name} ({identity.short_id}), torch {torch.__version__}; {len(graphs)} programs, folds "
          f"{','.join(map(str, folds))} of {args.folds} hold out {held}; {args.reps} reps; within {args.threshold:g}× of the best")
    strategies = args.strategies.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for f in folds:
            train, test = splits[f]
            rows += run_fold(args, paths, graphs, list(train), list(test), strategies, Path(folder))
    if args.out:
        Path(args.out).write_text(json.dumps({"strategies": strategies, "rows": rows}, indent=1))
    report(pd.DataFrame(rows), strategies, args.threshold, args.seed)


def report(frame: pd.DataFrame, strategies: list[str], threshold: float, seed: int) -> None:
    """The summary over programs: medians, means, censored runs, ratios of means to PF with their intervals."""
    per = frame.pivot_table(index="program", columns="strategy", values="median", aggfunc="mean")[strategies]  # over seeds
    summary = pd.DataFrame({"median over programs": per.median(), "mean over programs": per.mean(),
                            "runs never within": frame.groupby("strategy")["never"].sum()}).loc[strategies]
    if "PF" in per:
        summary["PF ÷ it (mean)"] = per["PF"].mean() / per.mean()
        summary["2.5%"], summary["97.5%"] = zip(*[ratio_interval(per, name, seed) for name in strategies])
    print(summary.to_string(float_format=lambda v: f"{v:.2f}"))
    shares = frame.groupby("program")[["configurations", "near_share"]].first()
    print(f"{len(per)} programs; configurations per program: median {shares['configurations'].median():.0f}; within "
          f"{threshold:g}× of the best: median {shares['near_share'].median():.1%}, max {shares['near_share'].max():.1%}")

if __name__ == "__main__":
    main()
