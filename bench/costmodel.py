"""The cost model's figures (issue 15): the GNN beside GBDT, the trip-count heuristic and the compiler's default
(tile data) or the roofline (absolute data), on the same program-grouped folds, seeds × folds, with the noise floor
of the data and the CPU time each model took; then the CPU minutes to train the default GNN on all of it.

Usage: python bench/costmodel.py [--data tpu-tiles | FOLDER] [--seeds 0,1,2] [--folds 5] [--models ...] [--params JSON]
  [--programs N]   (FOLDER: generated .npz files, e.g. data/costmodel/tile or data/costmodel/absolute; N: only its
  first N programs in name order, the folder as it stood when a figure was quoted)
"""

from __future__ import annotations

import argparse
import json
import time

from engine.surrogates._torch import torch
from engine.surrogates.costmodel.evaluate import cross_validate, fit_model, make_model
from engine.surrogates.costmodel.readers import read_folder, real_tpu_tiles
from engine.surrogates.costmodel.splits import first_programs
from engine.surrogates.difftune.measure import cpu_identity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--data", default="tpu-tiles", help="tpu-tiles (the real TPU kernels) or a folder of .npz graphs")
    parser.add_argument("--models", help="default: gnn,gbdt,heuristic,default (tile) or gnn,gbdt,roofline (absolute)")
    parser.add_argument("--params", default="{}", help='JSON hyper-parameters of the GNN, e.g. {"hidden": 128, "layers": 3}')
    parser.add_argument("--programs", type=int, help="only the first N programs of the folder, in name order")
    args = parser.parse_args()
    gnn = json.loads(args.params)
    identity = cpu_identity()
    graphs = real_tpu_tiles() if args.data == "tpu-tiles" else read_folder(args.data)
    graphs = graphs if args.programs is None else first_programs(graphs, args.programs)
    models = args.models or ("gnn,gbdt,roofline" if graphs[0].task == "absolute" else "gnn,gbdt,heuristic,default")
    print(f"CPU {identity.model_name} ({identity.short_id}), torch {torch.__version__} (threads sized by the model); "
          f"{len(graphs)} graphs ({len({g.program for g in graphs})} programs), {sum(len(g.runtime) for g in graphs)} runs")
    seeds = [int(s) for s in args.seeds.split(",")]
    print("GNN hyper-parameters:", gnn or "defaults")
    result = cross_validate(graphs, models.split(","), folds=args.folds, seeds=seeds, params={"gnn": gnn})
    print(result.table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("per seed, mean τ:", result.scores.groupby(["model", "seed"])["tau"].mean().unstack().round(3).to_dict("index"))
    print("noise floor:", result.noise)
    print("CPU seconds (fit + predict, all folds):", {k: round(v, 1) for k, v in result.seconds.items()})
    started = time.process_time()
    fit_model("gnn", make_model("gnn", 0, gnn), graphs, 0)
    print(f"{'tuned' if gnn else 'default'} GNN trained on all {len(graphs)} graphs: {(time.process_time() - started) / 60:.2f} CPU minutes")


if __name__ == "__main__":
    main()
