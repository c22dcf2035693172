"""The non-neural cost-model baselines and their features: synthetic graphs where the right answer is known, and a
leave-one-kernel-out run over the 15 real TPU kernels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.errors import UserError
from engine.surrogates.costmodel.baselines import GBDT, Roofline, TileHeuristic
from engine.surrogates.costmodel.features import BOUND_NAMES, OTHER, GraphFeatures, tile_estimates
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import score_table, summary

F32 = 11  # XLA's PrimitiveType id of float32


def make_graph(name: str, opcodes: list[str], sizes: list[float], runtime, config=None, *, task: str = "tile", program: str | None = None,
               extra: dict[str, float] | None = None, config_names: tuple[str, ...] = ()) -> TensorGraph:
    """A chain graph: node i consumes node i − 1."""
    runtime = np.asarray(runtime, dtype=float)
    n = len(opcodes)
    feat = np.column_stack([np.full(n, F32), sizes, np.sqrt(sizes)]).astype(np.float32)
    config = np.zeros((len(runtime), 1)) if config is None else np.asarray(config, dtype=float)
    return TensorGraph(name=name, program=program or name, task=task, opcodes=np.array(opcodes), node_feat=feat,
                       feat_names=("element_type", "dim_product", "dim_sum"), edges=np.array([[i, i - 1] for i in range(1, n)]).reshape(-1, 2),
                       node_splits=np.array([0]), config_feat=config.astype(np.float32), runtime=runtime, config_feat_names=config_names,
                       extra=extra or {})


def tile_graph(name: str, tiles: list[tuple[int, int]], runtime, kernel: tuple[int, int] = (0, 0)) -> TensorGraph:
    """A tile graph whose configurations set the first two output bounds (and optionally kernel bounds)."""
    config = np.zeros((len(tiles), len(BOUND_NAMES)))
    config[:, 6:8] = tiles
    config[:, 0:2] = kernel
    return make_graph(name, ["parameter", "exp", "add"], [4096.0, 4096.0, 4096.0], runtime, config, config_names=BOUND_NAMES)


# ---------------------------------------------------------------- features


def test_features_have_one_row_per_configuration_and_fixed_width():
    train = [make_graph("a", ["parameter", "add", "add"], [8, 8, 16], [1.0, 2.0, np.nan], [[1], [2], [3]]),
             make_graph("b", ["parameter", "exp"], [4, 4], [1.0, 3.0], [[0], [5]])]
    features = GraphFeatures().fit(train)
    assert features.vocabulary_ == ["add", "exp", "parameter"]
    for graph in train:
        rows = features.transform(graph)
        assert rows.shape == (len(graph.runtime), len(features.feature_names_))
    rows = features.transform(train[0])
    names = features.feature_names_
    assert rows[0, names.index("count[add]")] == 2 and rows[0, names.index("count[exp]")] == 0
    assert rows[0, names.index("max_log_dim_product[add]")] == pytest.approx(np.log2(17))
    assert rows[:, names.index("log_c000")] == pytest.approx(np.log2([2, 3, 4]))
    assert rows[0, names.index("log_nodes")] == pytest.approx(2.0) and rows[0, names.index("log_edges")] == pytest.approx(np.log2(3))


def test_unseen_opcodes_go_to_the_other_column():
    features = GraphFeatures().fit([make_graph("a", ["parameter", "add"], [8, 8], [1.0])])
    new = make_graph("b", ["parameter", "dot", "convolution"], [8, 1023, 15], [1.0])
    rows = features.transform(new)
    names = features.feature_names_
    assert rows[0, names.index(f"count[{OTHER}]")] == 2 and rows[0, names.index("count[add]")] == 0
    assert rows[0, names.index(f"max_log_dim_product[{OTHER}]")] == pytest.approx(10.0)


def test_static_counts_are_logged_and_missing_ones_are_nan():
    with_counts = make_graph("a", ["add"], [8], [1.0], task="absolute", extra={"graph_flops": 1023.0, "graph_bytes": 7.0})
    features = GraphFeatures().fit([with_counts])
    row = features.transform(with_counts)[0]
    assert row[features.feature_names_.index("log_graph_flops")] == pytest.approx(10.0)
    assert np.isnan(features.transform(make_graph("b", ["add"], [8], [1.0], task="absolute"))[0, -3])


def test_layout_configurations_are_averaged_over_their_nodes():
    config = np.full((3, 2, 4), -1.0)
    config[1, 0] = [0, 1, 2, 3]
    layout = TensorGraph(name="m", program="m", task="layout", opcodes=np.array(["parameter", "copy"]), node_feat=np.zeros((2, 1), np.float32),
                         feat_names=("dim_product",), edges=np.array([[1, 0]]), node_splits=np.array([0]), config_feat=config.astype(np.float32),
                         runtime=np.array([1.0, 2.0, 3.0]), config_nodes=np.array([0, 1]))
    features = GraphFeatures().fit([layout])
    rows = features.transform(layout)
    assert rows.shape == (3, len(features.feature_names_))
    assert rows[:, features.feature_names_.index("non_default_share")] == pytest.approx([0.0, 0.5, 0.0])


def test_tile_estimates_by_hand():
    graph = tile_graph("t", [(64, 32), (32, 32), (20, 32)], [1.0, 2.0, 3.0], kernel=(2, 0))
    trips, working_set = tile_estimates(graph)
    assert trips == pytest.approx([1, 2, 4])  # ⌈64 / 20⌉ = 4: a ragged last tile costs a whole trip
    assert working_set == pytest.approx([4 * (2048 + 2), 4 * (1024 + 2), 4 * (640 + 2)])
    features = GraphFeatures().fit([graph])
    assert features.transform(graph)[:, features.feature_names_.index("log_trips")] == pytest.approx(np.log2([1, 2, 4]))


def test_feature_errors_are_one_line():
    graph = make_graph("a", ["add"], [8], [1.0])
    with pytest.raises(UserError, match="not fitted"):
        GraphFeatures().transform(graph)
    with pytest.raises(UserError, match="non-empty list of TensorGraph"):
        GraphFeatures().fit([])
    with pytest.raises(UserError, match="mixes the tasks absolute, tile"):
        GraphFeatures().fit([graph, make_graph("b", ["add"], [8], [1.0], task="absolute")])
    with pytest.raises(UserError, match="graph 'c': a tile graph with 2 configuration columns"):
        GraphFeatures().fit([graph]).transform(make_graph("c", ["add"], [8], [1.0], [[1, 2]]))
    with pytest.raises(UserError, match=r"graph 'a': tile estimates need .* \(no column 'kernel_bounds_0'\)"):
        tile_estimates(graph)


# ---------------------------------------------------------------- tile heuristic


def spilling_family(name: str, extent: tuple[int, int]) -> TensorGraph:
    """Runtimes of a tiled loop over a power-of-two output: 2000 per trip plus the bytes streamed, 3× per byte once
    a tile exceeds 2 KiB. The tiles are the powers of two up to the extent, so the extent estimate is exact."""
    tiles = [(2**i, 2**j) for i in range(int(np.log2(extent[0])) + 1) for j in range(int(np.log2(extent[1])) + 1)]
    working_set = 4.0 * np.array([a * b for a, b in tiles])
    trips = np.array([extent[0] / a * extent[1] / b for a, b in tiles])
    return tile_graph(name, tiles, trips * (2000.0 + working_set * np.where(working_set > 2048, 3.0, 1.0)))


def test_heuristic_prefers_fewer_trips_without_a_budget():
    graph = tile_graph("t", [(1, 1), (2, 2), (4, 4), (8, 8)], [8.0, 4.0, 2.0, 1.0])
    scores = TileHeuristic(budget=np.inf).fit([graph]).predict(graph)
    assert np.all(np.diff(scores) < 0)


def test_heuristic_fits_the_on_chip_budget_and_ranks_a_held_out_family():
    train = [spilling_family("a", (64, 128)), spilling_family("b", (128, 32))]
    held_out = spilling_family("c", (128, 128))
    heuristic = TileHeuristic().fit(train)
    assert 1024 <= heuristic.budget_ <= 4096
    row = score_table([held_out], [heuristic.predict(held_out)]).iloc[0]
    assert row.tau > 0.7 and row.slowdown_1 < 1.1
    unbounded = score_table([held_out], [TileHeuristic(budget=np.inf).fit(train).predict(held_out)]).iloc[0]
    assert unbounded.slowdown_1 > 1.3  # ignoring the spill picks the biggest tile


def test_heuristic_parameters_are_checked_at_fit():
    graph = tile_graph("t", [(1, 1), (2, 2)], [2.0, 1.0])
    for bad in [{"budget": -1.0}, {"budget": "auto"}, {"overhead": np.nan}, {"overhead": True}]:
        with pytest.raises(UserError, match="must be a number"):
            TileHeuristic(**bad).fit([graph])
    with pytest.raises(UserError, match="TileHeuristic is not fitted"):
        TileHeuristic().predict(graph)


# ---------------------------------------------------------------- roofline


def absolute_graphs(rng: np.random.Generator, count: int, noise: float = 0.0) -> list[TensorGraph]:
    graphs = []
    for i in range(count):
        flops, bytes_, kernels = rng.uniform(1e3, 1e6), rng.uniform(1e3, 1e6), float(rng.integers(1, 20))
        runtime = (1000 + 0.5 * flops + 2.0 * bytes_ + 300 * kernels) * np.exp(noise * rng.standard_normal(2))
        graphs.append(make_graph(f"g{i}", ["add"], [8], runtime, task="absolute",
                                 extra={"graph_flops": flops, "graph_bytes": bytes_, "kernels": kernels}))
    return graphs


def test_roofline_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    exact = Roofline().fit(absolute_graphs(rng, 40))
    assert exact.coef_ == pytest.approx([1000, 0.5, 2.0, 300], rel=1e-6)
    noisy = Roofline().fit(absolute_graphs(rng, 200, noise=0.02))
    assert noisy.coef_[1:3] == pytest.approx([0.5, 2.0], rel=0.05)
    graph = absolute_graphs(rng, 1)[0]
    assert noisy.predict(graph) == pytest.approx(graph.runtime, rel=0.1)


def test_roofline_names_a_graph_without_static_counts():
    graphs = absolute_graphs(np.random.default_rng(1), 3)
    with pytest.raises(UserError, match=r"graph 'bare': the roofline needs extra\['graph_flops'\]"):
        Roofline().fit([*graphs, make_graph("bare", ["add"], [8], [1.0], task="absolute")])
    with pytest.raises(UserError, match="graph 't': the roofline predicts absolute runtimes, not a tile ranking"):
        Roofline().fit([tile_graph("t", [(1, 1)], [1.0])])
    with pytest.raises(UserError, match="Roofline is not fitted"):
        Roofline().predict(graphs[0])


# ---------------------------------------------------------------- GBDT


def kernel_graphs(rng: np.random.Generator, count: int) -> list[TensorGraph]:
    """Absolute kernels whose runtime follows their dots and adds: 2 ns per dot element, 50 ns per add."""
    graphs = []
    for i in range(count):
        dots, adds, size = int(rng.integers(0, 4)), int(rng.integers(1, 8)), float(2 ** rng.integers(4, 14))
        runtime = (2.0 * dots * size + 50.0 * adds + 100.0) * np.exp(0.02 * rng.standard_normal(1))
        graphs.append(make_graph(f"g{i}", ["parameter", *["dot"] * dots, *["add"] * adds], [size] * (1 + dots + adds), runtime, task="absolute"))
    return graphs


def test_gbdt_beats_a_constant_on_a_learnable_task():
    rng = np.random.default_rng(0)
    train, test = kernel_graphs(rng, 150), kernel_graphs(rng, 40)
    model = GBDT(max_iter=100, seed=0).fit(train)
    learned = summary(score_table(test, [model.predict(graph) for graph in test])).loc["overall", "mape_mean"]
    typical = np.exp(np.mean([np.log(graph.runtime[0]) for graph in train]))
    constant = summary(score_table(test, [np.full(1, typical) for _ in test])).loc["overall", "mape_mean"]
    assert learned < 0.25 < constant


def test_gbdt_ranks_held_out_tile_families():
    train = [spilling_family(f"f{i}", extent) for i, extent in enumerate([(64, 128), (128, 32), (32, 64), (128, 64)])]
    held_out = spilling_family("c", (128, 128))
    model = GBDT(max_iter=100, min_samples_leaf=3).fit(train)
    row = score_table([held_out], [model.predict(held_out)]).iloc[0]
    assert row.tau > 0.7 and row.slowdown_5 < 1.5


def test_gbdt_is_reproducible_and_checks_its_parameters():
    rng = np.random.default_rng(2)
    graphs = kernel_graphs(rng, 30)
    first, second = (GBDT(max_iter=20, seed=4).fit(graphs).predict(graphs[0]) for _ in range(2))
    assert np.array_equal(first, second)
    for bad in [{"max_iter": 0}, {"learning_rate": 0.0}, {"seed": -1}, {"threads": 0}, {"balance": "yes"}, {"max_leaf_nodes": 2.5}]:
        with pytest.raises(UserError, match=f"{next(iter(bad))} must be"):
            GBDT(**bad).fit(graphs)
    with pytest.raises(UserError, match="no valid run"):
        GBDT().fit([make_graph("e", ["add"], [8], [np.nan], task="absolute")])
    with pytest.raises(UserError, match="GBDT is not fitted"):
        GBDT().predict(graphs[0])
    for weights in ([1.0], [1.0] * 29 + [0.0], [1.0] * 29 + [np.nan]):
        with pytest.raises(UserError, match="graph_weights: one finite weight > 0 per graph"):
            GBDT(max_iter=5).fit(graphs, weights)


def test_a_heavy_graph_pulls_the_trees_toward_its_own_runtimes():
    """Weighting one graph as much as all the others makes the fit follow it where they disagree: how PF-GBDT
    lets a program's own measurements outweigh the training programs."""
    rng = np.random.default_rng(3)
    graphs = kernel_graphs(rng, 30)
    odd = make_graph("odd", ["add"], [8], [graphs[0].runtime[0] * 50], task="absolute")
    twin = [make_graph(f"t{i}", ["add"], [8], [graphs[0].runtime[0]], task="absolute") for i in range(5)]
    light = GBDT(max_iter=50, min_samples_leaf=1, seed=0).fit([*graphs, *twin, odd]).predict(odd)[0]
    heavy = GBDT(max_iter=50, min_samples_leaf=1, seed=0).fit([*graphs, *twin, odd], [1.0] * 35 + [100.0]).predict(odd)[0]
    assert abs(np.log(heavy / odd.runtime[0])) < 0.5 * abs(np.log(light / odd.runtime[0]))


# ---------------------------------------------------------------- real TPU kernels


@pytest.mark.slow
def test_leave_one_kernel_out_on_the_real_tpu_kernels(data: Path):
    readers = pytest.importorskip("engine.surrogates.costmodel.readers")
    graphs = readers.real_tpu_tiles()
    assert len({graph.program for graph in graphs}) == len(graphs) == 15  # each kernel is its own program
    figures = {}
    models: dict[str, Callable[[], TileHeuristic | GBDT]] = {"heuristic": TileHeuristic, "gbdt": lambda: GBDT(max_iter=50)}
    for name, make in models.items():
        predictions = [make().fit(graphs[:i] + graphs[i + 1:]).predict(graph) for i, graph in enumerate(graphs)]
        overall = summary(score_table(graphs, predictions)).loc["overall"]
        figures[name] = overall
        print(f"{name}: mean tau {overall.tau_mean:.3f}, median top-1 slowdown {overall.slowdown_1_median:.3f}, "
              f"median top-5 slowdown {overall.slowdown_5_median:.3f}, mean top-5 slowdown {overall.slowdown_5_mean:.3f}")
        assert 0.0 < overall.tau_mean <= 1.0
        for k in (1, 5, 10):
            assert 1.0 <= overall[f"slowdown_{k}_median"] <= overall[f"slowdown_{k}_mean"] * 2 < 10
    assert figures["heuristic"].tau_mean > 0.5  # trip counts alone order TPU tiles well (costmodel.md §4.3)


def test_a_generated_chunk_program_runs_chunks_trips_over_its_rows_and_intermediate() -> None:
    from engine.io.paths import REPO_ROOT
    from engine.surrogates.costmodel.readers import read_graph

    graph = read_graph(sorted((REPO_ROOT / "data" / "costmodel" / "tile").glob("*.npz"))[0])
    column = {name: graph.config_feat[:, i] for i, name in enumerate(graph.config_feat_names)}
    trips, working_set = tile_estimates(graph)
    assert trips.tolist() == column["chunks"].tolist()
    assert np.allclose(working_set, 4 * column["batch_size"] * (column["row_width"] + column["second"]))
    assert np.isfinite(TileHeuristic().fit([graph]).predict(graph)).all()
