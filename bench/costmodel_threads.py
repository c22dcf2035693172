"""How many torch threads the GNN cost model should train with (issue 34, item 4): wall seconds of the same
training at 1, 2, … threads, on steps of different sizes, so that ``NODES_PER_THREAD`` in
``engine/surrogates/costmodel/training.py`` rests on a measurement.

Workloads (nodes of one training step = graphs per step × configurations per graph × nodes per graph, early join):
* ``tile``: the committed CPU tile programs (about 33 nodes, 12 configurations: ~3,000 nodes a step);
* ``layout-N``: synthetic layout graphs of N nodes, TpuGraphs-style widths (70 node, 10 configuration features),
  32 configurations over min(30, N) configurable nodes (8 × 32 × N nodes a step).

Usage: python bench/costmodel_threads.py [--threads 1,2] [--epochs 2] [--sizes 200,2000]
Run it on an otherwise idle machine: another process on the same cores makes more threads look worse.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from engine.io.paths import REPO_ROOT
from engine.surrogates._torch import available_cpus, torch
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.readers import read_folder
from engine.surrogates.costmodel.training import CostModel
from engine.surrogates.difftune.measure import cpu_identity


def layout_graphs(nodes: int, count: int = 8, seed: int = 0) -> list[TensorGraph]:
    """``count`` random layout graphs of ``nodes`` nodes (a random tree), foreign widths."""
    rng = np.random.default_rng(seed)
    graphs = []
    for i in range(count):
        edges = np.array([[j, int(rng.integers(0, j))] for j in range(1, nodes)], np.int64)
        graphs.append(TensorGraph(
            name=f"g{i}", program=f"p{i}", task="layout", opcodes=np.array([f"op{k}" for k in rng.integers(0, 40, nodes)]),
            node_feat=rng.random((nodes, 70), np.float32), feat_names=(), edges=edges, node_splits=np.array([0]),
            config_feat=rng.integers(-1, 4, (32, min(30, nodes), 10)).astype(np.float32), runtime=rng.uniform(1e6, 2e6, 32),
            config_nodes=np.sort(rng.choice(nodes, min(30, nodes), replace=False))))
    return graphs


def timed(graphs: list[TensorGraph], count: int, epochs: int) -> float:
    started = time.perf_counter()
    CostModel(epochs=epochs, threads=count, seed=0).fit(graphs)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default=",".join(str(t) for t in range(1, available_cpus() + 1)))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--sizes", default="200,2000", help="layout graph sizes (nodes)")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}), {available_cpus()} CPUs available, torch {torch.__version__}")
    workloads = {"tile": read_folder(REPO_ROOT / "data" / "costmodel" / "tile")[:80]}
    workloads |= {f"layout-{n}": layout_graphs(n) for n in (int(s) for s in args.sizes.split(","))}
    for name, graphs in workloads.items():
        step = 8 * min(32, len(graphs[0].runtime)) * float(np.mean([len(g.opcodes) for g in graphs]))
        seconds = {t: timed(graphs, t, args.epochs) for t in counts}
        ratios = ", ".join(f"{t} threads {seconds[t]:.1f} s ({seconds[counts[0]] / seconds[t]:.2f}x)" for t in counts)
        print(f"{name}: ~{step:,.0f} nodes a step; {ratios}")


if __name__ == "__main__":
    main()
