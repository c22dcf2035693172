"""The Cost model section's data and figures, on a hand-made predictions frame and a hand-made kernel graph: ranks
inside a graph, the marks of the rank plot, top-K curves, the baselines table, and the graph picture's layout."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import UserError
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import topk_slowdown
from engine.surrogates.costmodel.plots import (
    graph_layout,
    graph_picture,
    models_table,
    node_depths,
    opcode_colours,
    rank_data,
    rank_figure,
    scatter_data,
    scatter_figure,
    scores_table,
    shape_text,
    topk_data,
    topk_figure,
    trained_table,
)

#: Kernel g1: 6 runs (run 5 failed); g2: 3 runs. Model "good" ranks g1 perfectly, "bad" in reverse, "flat" ties all.
G1 = [40.0, 10.0, 30.0, 20.0, 50.0, np.nan]
G2 = [7.0, 5.0, 6.0]


def _rows(model: str, seed: int, graph: str, runtime: list[float], prediction: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"model": model, "seed": seed, "fold": 0, "graph": graph, "program": f"p-{graph}",
                         "config": np.arange(len(runtime)), "runtime": runtime, "prediction": prediction})


def _predictions() -> pd.DataFrame:
    good_g1 = [4.0, 1.0, 3.0, 2.0, 5.0, 0.0]  # the failed run scored best: it must not count
    parts = [_rows("good", 0, "g1", G1, good_g1), _rows("good", 0, "g2", G2, [3.0, 1.0, 2.0]),
             _rows("bad", 0, "g1", G1, [-v for v in good_g1]), _rows("bad", 0, "g2", G2, [-3.0, -1.0, -2.0]),
             _rows("flat", 0, "g1", G1, [1.0] * 6), _rows("flat", 0, "g2", G2, [1.0] * 3),
             _rows("good", 1, "g1", G1, good_g1), _rows("good", 1, "g2", G2, [1.0, 3.0, 2.0])]
    return pd.concat(parts, ignore_index=True)


PREDICTIONS = _predictions()


# -- scatter ------------------------------------------------------------------------------------------------


def test_scatter_ranks_each_graph_apart_and_drops_failed_runs():
    data = scatter_data(PREDICTIONS, "good", seed=0)
    assert len(data) == 5 + 3 and data["runtime"].notna().all()
    g1 = data[data["graph"] == "g1"].set_index("config")
    assert g1["rank"].to_dict() == {1: 1, 3: 2, 2: 3, 0: 4, 4: 5}
    assert g1.loc[1, "rank_fraction"] == 0.0 and g1.loc[4, "rank_fraction"] == 1.0 and g1.loc[3, "rank_fraction"] == 0.25
    assert g1["relative_runtime"].to_dict() == {1: 1.0, 3: 2.0, 2: 3.0, 0: 4.0, 4: 5.0}
    g2 = data[data["graph"] == "g2"].set_index("config")
    assert g2["rank_fraction"].to_dict() == {1: 0.0, 2: 0.5, 0: 1.0} and g2.loc[1, "relative_runtime"] == 1.0
    both = scatter_data(PREDICTIONS, "good")
    assert sorted(both["seed"].unique()) == [0, 1] and len(both) == 16
    with pytest.raises(UserError, match="none of model 'nope'"):
        scatter_data(PREDICTIONS, "nope")


def test_tied_scores_share_the_lowest_rank():
    data = scatter_data(PREDICTIONS, "flat", seed=0)
    assert set(data["rank"]) == {1} and set(data["rank_fraction"]) == {0.0}


def test_scatter_figure_ranking_and_absolute():
    noise = {"repeated": 3.0, "median_log_ratio": 0.1, "max_log_ratio": 0.5}
    figure = scatter_figure(scatter_data(PREDICTIONS, "good", seed=0), task="tile", noise=noise)
    assert [t.name for t in figure.data] == ["g1", "g2"] and figure.layout.yaxis.type == "log"
    assert list(figure.data[0].x) == [0.0, 0.25, 0.5, 0.75, 1.0]
    (band,) = figure.layout.shapes
    assert band.y0 == 1.0 and band.y1 == pytest.approx(np.exp(0.1))
    absolute = pd.concat([_rows("gbdt", 0, "k", [100.0, 200.0], [110.0, 190.0])])
    figure = scatter_figure(scatter_data(absolute, "gbdt"), task="absolute")
    assert [t.name for t in figure.data] == ["k", "exact"] and list(figure.data[0].x) == [110.0, 190.0]
    assert figure.layout.xaxis.type == figure.layout.yaxis.type == "log" and not figure.layout.shapes


# -- rank plot ----------------------------------------------------------------------------------------------


def test_rank_data_orders_a_kernel_by_prediction_and_marks_the_best_and_the_picks():
    data = rank_data(PREDICTIONS, ["bad", "good"], "g1", 0)
    assert list(dict.fromkeys(data["model"])) == ["bad", "good"]  # the order asked
    good = data[data["model"] == "good"]
    assert good["config"].tolist() == [1, 3, 2, 0, 4] and good["rank"].tolist() == [1, 2, 3, 4, 5]
    assert good["runtime"].is_monotonic_increasing and 5 not in good["config"].tolist()
    assert good[good["best"]]["config"].tolist() == [1] and good[good["top_1"]]["config"].tolist() == [1]
    bad = data[data["model"] == "bad"]
    assert bad["config"].tolist() == [4, 0, 2, 3, 1] and bad[bad["top_1"]]["config"].tolist() == [4]
    assert bad[bad["best"]]["rank"].tolist() == [5] and bad["top_5"].all()
    flat = rank_data(PREDICTIONS, "flat", "g1", 0)
    assert flat["top_1"].all()  # a tied group counts as picked whole
    assert rank_data(PREDICTIONS, "good", "g2", 1)["config"].tolist() == [0, 2, 1]  # seed 1's own ranking
    with pytest.raises(UserError, match="no column|has none"):
        rank_data(PREDICTIONS, "good", "g3", 0)


def test_rank_figure_draws_a_line_per_model_with_its_pick_and_the_best():
    figure = rank_figure(rank_data(PREDICTIONS, ["good", "bad"], "g1", 0), noise={"repeated": 1.0, "median_log_ratio": 0.2,
                                                                                 "max_log_ratio": 0.2})
    names = [t.name for t in figure.data]
    assert names == ["good", "good: top-1 pick", "good: best measured", "bad", "bad: top-1 pick", "bad: best measured"]
    traces = {t.name: t for t in figure.data}
    assert list(traces["bad: best measured"].x) == [5] and list(traces["bad: best measured"].y) == [10.0]
    assert list(traces["good: top-1 pick"].x) == [1] and traces["good"].line.color != traces["bad"].line.color
    top5, best, noise = figure.layout.shapes
    assert (top5.x0, top5.x1) == (0.5, 5.5) and best.y0 == 10.0 and noise.y1 == pytest.approx(10 * np.exp(0.2))


# -- top-K --------------------------------------------------------------------------------------------------


def test_topk_curves_follow_the_metric_and_reach_one():
    data = topk_data(PREDICTIONS[PREDICTIONS["seed"] == 0], ks=(1, 2, 5))
    bad = data[data["model"] == "bad"].set_index("k")["slowdown"]
    g1 = np.array(G1)
    expected = {k: np.median([topk_slowdown(-np.array([4.0, 1, 3, 2, 5, 0]), g1, k),
                              topk_slowdown(-np.array([3.0, 1, 2]), np.array(G2), k)]) for k in (1, 2, 5)}
    assert bad.to_dict() == pytest.approx(expected) and bad[1] == pytest.approx((5.0 + 7 / 5) / 2)
    assert (data[data["model"] == "good"]["slowdown"] == 1.0).all()
    assert bad.is_monotonic_decreasing and bad[5] == 1.0
    figure = topk_figure(data)
    assert [t.name for t in figure.data] == ["good", "bad", "flat"]
    assert list(dict.fromkeys(topk_data(PREDICTIONS, ks=(1,), models=["flat", "good"])["model"])) == ["flat", "good"]


# -- tables -------------------------------------------------------------------------------------------------

SUMMARY = {"models": [{"model": "gbdt", "graphs": 15, "runs": 45, "tau": 0.7, "tau_seed_sd": 0.02, "slowdown_1": 1.04,
                       "slowdown_5": 1.0, "slowdown_10": 1.0, "mape": None, "median_ape": None},
                      {"model": "heuristic", "graphs": 15, "runs": 45, "tau": 0.75, "tau_seed_sd": 0.0,
                       "slowdown_1": 1.02, "slowdown_5": 1.0, "slowdown_10": 1.0, "mape": None, "median_ape": None}],
           "seconds": {"gbdt": 1.5, "heuristic": 0.5}, "noise": {"repeated": 6.0, "median_log_ratio": 0.02, "max_log_ratio": 0.75},
           "scores": [{"graph": "b", "program": "b", "task": "tile", "n_configs": 3, "tau": 1.0, "slowdown_1": 1.0,
                       "slowdown_5": 1.0, "slowdown_10": 1.0, "mape": None, "median_ape": None, "model": "gbdt", "seed": 0, "fold": 0},
                      {"graph": "a", "program": "a", "task": "tile", "n_configs": 4, "tau": 0.5, "slowdown_1": 1.2,
                       "slowdown_5": 1.0, "slowdown_10": 1.0, "mape": None, "median_ape": None, "model": "gbdt", "seed": 1, "fold": 2}]}


def test_models_table_has_readable_columns_and_the_cpu_seconds():
    table = models_table(SUMMARY)
    assert list(table.columns) == ["model", "graphs", "τ (mean)", "τ sd over seeds", "top-1 slowdown (median)",
                                   "top-5 slowdown (median)", "top-10 slowdown (median)", "CPU s"]
    assert table["model"].tolist() == ["gbdt", "heuristic"] and table["CPU s"].tolist() == [1.5, 0.5]
    assert table["τ (mean)"].tolist() == [0.7, 0.75]
    absolute = {"models": [{**SUMMARY["models"][0], "model": "roofline", "mape": 0.3, "median_ape": 0.2}], "seconds": {}}
    table = models_table(absolute)
    assert table[["MAPE", "median APE"]].values.tolist() == [[0.3, 0.2]] and np.isnan(table["CPU s"].iloc[0])
    assert models_table({"models": []}).empty


def test_scores_table_sorts_by_graph_and_filters_a_seed():
    table = scores_table(SUMMARY)
    assert table["graph"].tolist() == ["a", "b"] and "MAPE" not in table and "top-1 slowdown" in table
    assert scores_table(SUMMARY, seed=0)["graph"].tolist() == ["b"]


def test_trained_table_reads_params_and_summary():
    listing = pd.DataFrame({"id": [1], "name": ["m"], "data": ["tpu-tiles"], "task": ["tile"],
                            "params": [{"epochs": 3, "hidden": 16, "join": "early"}], "folder": ["x.costmodels/m"],
                            "seconds": [120.0], "summary": [{"graphs": 15}], "created_at": [pd.Timestamp("2025-01-01")]})
    row = trained_table(listing).iloc[0]
    assert (row["epochs"], row["hidden"], row["join"], row["graphs"], row["CPU min"]) == (3, 16, "early", 15, 2.0)
    assert trained_table(listing.iloc[:0]).empty


# -- the graph ----------------------------------------------------------------------------------------------

FEATURES = ("is_root", "element_type", "dim_0", "dim_1", "dim_2", "dim_3", "dim_4", "dim_5", "tuple_size")


def _kernel() -> TensorGraph:
    """computation 0: p0, p1 → fusion (root; consumes computation 1's root); computation 1: p2, p3 → mul → add
    (root), with add also consuming p2 (so add is at depth 2, not 1)."""
    opcodes = np.array(["parameter", "parameter", "fusion", "parameter", "parameter", "multiply", "add"])
    feat = np.zeros((7, len(FEATURES)), np.float32)
    feat[:, 1] = 11  # f32
    feat[:, 2:4] = [32, 128]
    feat[2, 0] = feat[6, 0] = 1
    feat[2, 1], feat[2, 8], feat[2, 2:4] = 13, 2, 0  # a tuple of two
    edges = np.array([[2, 0], [2, 1], [2, 6], [5, 3], [5, 4], [6, 5], [6, 3]])
    return TensorGraph(name="k", program="k", task="tile", opcodes=opcodes, node_feat=feat, feat_names=FEATURES,
                       edges=edges, node_splits=np.array([0, 3]), config_feat=np.zeros((2, 1), np.float32),
                       runtime=np.array([1.0, 2.0]))


def test_depth_is_the_longest_path_from_the_operands():
    graph = _kernel()
    depth = node_depths(graph.edges, 7)
    assert depth.tolist() == [0, 0, 3, 0, 0, 1, 2]
    assert (depth[graph.edges[:, 0]] > depth[graph.edges[:, 1]]).all()  # deeper along every edge
    assert node_depths(np.array([[1, 0], [0, 1], [2, 2]]), 3).tolist() == [1, 1, 0]  # a cycle lands after the rest
    assert node_depths(np.empty((0, 2)), 2).tolist() == [0, 0]


def test_layout_bands_computations_and_reads_the_shapes():
    graph = _kernel()
    layout = graph_layout(graph)
    assert layout["computation"].tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert (layout["x"] == layout["depth"]).all()
    assert layout[layout["computation"] == 0]["y"].min() > layout[layout["computation"] == 1]["y"].max()
    assert not layout.duplicated(["x", "y"]).any()
    assert layout["root"].tolist() == [False, False, True, False, False, False, True]
    assert shape_text(graph, 0) == "f32[32,128]" and shape_text(graph, 2) == "tuple of 2"


def test_graph_picture_colours_each_opcode_and_draws_every_edge():
    graph = _kernel()
    figure = graph_picture(graph)
    edges, *nodes = figure.data
    assert len(edges.x) == 3 * len(graph.edges) and edges.mode == "lines"
    assert [t.name for t in nodes] == ["add", "fusion", "multiply", "parameter"]
    colours = opcode_colours(graph.opcodes)
    assert [t.marker.color for t in nodes] == [colours[t.name] for t in nodes] and len(set(colours.values())) == 4
    fusion = next(t for t in nodes if t.name == "fusion")
    assert "fusion</b> tuple of 2" in fusion.text[0] and "(root)" in fusion.text[0] and list(fusion.x) == [3.0]
    assert [a.text for a in figure.layout.annotations] == ["computation 0", "computation 1"]
