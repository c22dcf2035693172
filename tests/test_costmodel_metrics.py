"""Cost-model metrics and program-grouped splits, checked by hand on small graphs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from engine.errors import UserError
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import ape, kendall_tau, score_table, summary, topk_error, topk_slowdown
from engine.surrogates.costmodel.splits import first_programs, group_folds, train_val_test


def make_graph(name: str, runtime, program: str | None = None, task: str = "tile", normalizer=None) -> TensorGraph:
    runtime = np.asarray(runtime, dtype=float)
    return TensorGraph(name=name, program=program or name, task=task, opcodes=np.array(["parameter", "add"]),
                       node_feat=np.zeros((2, 1), np.float32), feat_names=("dim_product",), edges=np.array([[1, 0]]),
                       node_splits=np.array([0]), config_feat=np.zeros((len(runtime), 1), np.float32), runtime=runtime,
                       normalizer=None if normalizer is None else np.asarray(normalizer, dtype=float))


# ---------------------------------------------------------------- ranking metrics

RUNTIMES = np.array([3.0, 1.0, 4.0, 2.0])


def test_a_perfect_ranking():
    assert kendall_tau(RUNTIMES * 10, RUNTIMES) == pytest.approx(1.0)
    assert [topk_slowdown(RUNTIMES, RUNTIMES, k) for k in (1, 5, 10)] == [1.0, 1.0, 1.0]
    assert topk_error(RUNTIMES, RUNTIMES, 1) == 0.0


def test_a_reversed_ranking_picks_the_slowest_first():
    assert kendall_tau(-RUNTIMES, RUNTIMES) == pytest.approx(-1.0)
    assert topk_slowdown(-RUNTIMES, RUNTIMES, 1) == 4.0
    assert topk_slowdown(-RUNTIMES, RUNTIMES, 3) == 2.0
    assert topk_error(-RUNTIMES, RUNTIMES, 1) == pytest.approx(3.0)


def test_k_beyond_the_configurations_takes_them_all():
    assert topk_slowdown(-RUNTIMES, RUNTIMES, 10) == 1.0
    assert topk_slowdown([5.0], [7.0], 5) == 1.0


def test_tied_scores_count_as_a_random_pick():
    constant = np.zeros(4)
    assert np.isnan(kendall_tau(constant, RUNTIMES))
    assert topk_slowdown(constant, RUNTIMES, 1) == pytest.approx(2.5)  # the mean runtime ÷ the best
    assert topk_slowdown(constant, RUNTIMES, 2) == pytest.approx((3 * 1 + 2 * 2 + 1 * 3) / 6)  # over the 6 pairs
    scores, runtimes = np.array([0.0, 1.0, 1.0, 2.0]), np.array([4.0, 1.0, 2.0, 3.0])
    assert topk_slowdown(scores, runtimes, 1) == 4.0
    assert topk_slowdown(scores, runtimes, 2) == pytest.approx(1.5)  # 4 for sure, then 1 or 2
    assert topk_slowdown(scores, runtimes, 3) == 1.0
    assert topk_slowdown(scores[::-1], runtimes[::-1], 2) == pytest.approx(1.5)  # whatever the input order
    assert topk_slowdown(constant, RUNTIMES[::-1], 1) == pytest.approx(2.5)


def test_tau_is_tau_b_with_ties():
    scores, runtimes = np.array([1.0, 1.0, 2.0, 3.0, 3.0]), np.array([1.0, 2.0, 2.0, 5.0, 4.0])
    assert kendall_tau(scores, runtimes) == pytest.approx(kendalltau(scores, runtimes).statistic)


def test_error_runs_are_never_chosen_nor_ranked():
    runtimes = np.array([np.nan, 2.0, 3.0, np.nan])
    scores = np.array([-10.0, 0.0, 1.0, np.nan])  # the failed runs score best, or not at all
    assert topk_slowdown(scores, runtimes, 1) == 1.0
    assert kendall_tau(scores, runtimes) == pytest.approx(1.0)
    assert np.isnan(kendall_tau([0.0, 1.0], [np.nan, 2.0]))  # one valid run: undefined
    assert np.isnan(topk_slowdown([0.0], [np.nan], 1))


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(UserError, match="one score per run"):
        kendall_tau([1.0, 2.0], [1.0])
    with pytest.raises(UserError, match="not a finite number"):
        topk_slowdown([np.nan, 1.0], [1.0, 2.0], 1)
    for k in (0, 1.5, True):
        with pytest.raises(UserError, match="K ≥ 1"):
            topk_slowdown([1.0], [1.0], k)


def test_absolute_errors():
    assert ape([110.0, 90.0, 5.0], [100.0, 100.0, np.nan]) == pytest.approx([0.1, 0.1])


# ---------------------------------------------------------------- tables


def test_score_table_ranks_by_relative_runtime_and_reports_ape_for_absolute_graphs():
    tile = make_graph("k", [10.0, 20.0, np.nan], normalizer=[1.0, 4.0, 1.0])  # relative runtimes 10, 5
    absolute = make_graph("a", [100.0, 200.0], task="absolute")
    table = score_table([tile, absolute], [np.array([1.0, 0.0, -5.0]), np.array([110.0, 150.0])]).set_index("graph")
    assert table.loc["k", "n_configs"] == 2 and table.loc["k", "tau"] == pytest.approx(1.0)
    assert table.loc["k", "slowdown_1"] == 1.0 and np.isnan(table.loc["k", "mape"])
    assert table.loc["a", "mape"] == pytest.approx((0.1 + 0.25) / 2) and table.loc["a", "median_ape"] == pytest.approx(0.175)
    with pytest.raises(UserError, match="1 predictions for 2 graphs"):
        score_table([tile, absolute], [np.zeros(3)])
    with pytest.raises(UserError, match="graph 'a': prediction of shape"):
        score_table([absolute], [np.zeros(3)])
    with pytest.raises(UserError, match="graph 'a': score nan"):
        score_table([absolute], [np.array([np.nan, 1.0])])


def test_a_graph_of_one_configuration_has_no_ranking_figures():
    """One valid run is always 'the best pick': slowdown 1.0 would flatter any model, so it is left undefined."""
    lone = make_graph("one", [100.0, np.nan], task="absolute")
    row = score_table([lone], [np.array([90.0, 5.0])]).iloc[0]
    assert row["n_configs"] == 1 and row["mape"] == pytest.approx(0.1)
    assert np.isnan(row["tau"]) and all(np.isnan(row[f"slowdown_{k}"]) for k in (1, 5, 10))


def test_summary_averages_per_program_then_over_programs():
    runtimes = [1.0, 2.0, 3.0]
    graphs = [make_graph("a1", runtimes, "A"), make_graph("a2", runtimes, "A"), make_graph("b1", runtimes, "B")]
    table = score_table(graphs, [np.array(runtimes), np.array([1.0, 3.0, 2.0]), -np.array(runtimes)])
    result = summary(table)
    assert list(result.index) == ["A", "B", "overall"]
    assert result.loc["A", "tau_mean"] == pytest.approx((1 + 1 / 3) / 2)
    assert result.loc["overall", "tau_mean"] == pytest.approx(((1 + 1 / 3) / 2 - 1) / 2)  # each program weighs the same
    assert result.loc["B", "slowdown_1_median"] == 3.0 and result.loc["overall", "slowdown_1_median"] == 2.0
    assert result["graphs"].tolist() == [2, 1, 3]
    with pytest.raises(UserError, match="column 'tau' is missing"):
        summary(table.drop(columns="tau"))
    with pytest.raises(UserError, match="at least one graph"):
        summary(table.iloc[:0])


# ---------------------------------------------------------------- splits


def family(programs: int, per_program: int = 2) -> list[TensorGraph]:
    return [make_graph(f"p{p}k{i}", [1.0, 2.0], f"p{p}") for p in range(programs) for i in range(per_program)]


def programs_of(graphs: list[TensorGraph], indices: np.ndarray) -> set[str]:
    return {graphs[i].program for i in indices}


def test_folds_keep_each_program_together_and_cover_every_graph_once():
    graphs = family(7) + family(2, 3)[:3]  # one program with 3 graphs
    folds = group_folds(graphs, k=3, seed=1)
    assert len(folds) == 3
    tests = np.concatenate([test for _, test in folds])
    assert sorted(tests.tolist()) == list(range(len(graphs)))
    for train, test in folds:
        assert not programs_of(graphs, train) & programs_of(graphs, test)
        assert sorted([*train, *test]) == list(range(len(graphs)))
    assert sorted(len(test) for _, test in folds) == [5, 6, 6]  # balanced by graph count


def test_folds_are_reproducible_by_seed():
    graphs = family(8)
    same = [group_folds(graphs, 4, seed=3) for _ in range(2)]
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(*same))
    tests = {tuple(group_folds(graphs, 4, seed)[0][1]) for seed in range(5)}
    assert len(tests) > 1


def test_k_is_capped_at_the_programs_and_one_program_is_refused():
    assert len(group_folds(family(3), k=10)) == 3
    with pytest.raises(UserError, match="at least 2 programs, got 1"):
        group_folds(family(1), k=2)
    with pytest.raises(UserError, match="k must be an integer ≥ 2"):
        group_folds(family(3), k=1)
    with pytest.raises(UserError, match="seed must be an integer"):
        group_folds(family(3), k=2, seed="x")


def test_first_programs_keeps_whole_programs_in_name_order():
    graphs = family(12)[::-1]  # file order need not be name order
    kept = first_programs(graphs, 3)
    assert {g.program for g in kept} == {"p0", "p1", "p10"} and len(kept) == 6  # names sort as text, as files do
    assert first_programs(graphs, 100) == graphs
    with pytest.raises(UserError, match="programs must be an integer ≥ 1, got 0"):
        first_programs(graphs, 0)


def test_train_val_test_by_program():
    graphs = family(10)
    train, val, test = train_val_test(graphs, seed=2)
    assert (len(programs_of(graphs, train)), len(programs_of(graphs, val)), len(programs_of(graphs, test))) == (8, 1, 1)
    assert sorted([*train, *val, *test]) == list(range(20))
    assert not programs_of(graphs, train) & (programs_of(graphs, val) | programs_of(graphs, test))
    again = train_val_test(graphs, seed=2)
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again))
    assert len(train_val_test(graphs, fractions=(0.5, 0.0, 0.5))[1]) == 0


def test_bad_fractions():
    for fractions in [(0.5, 0.5), (0.0, 0.5, 0.5), (0.8, 0.3, -0.1), (0.8, 0.1, 0.2), "abc"]:
        with pytest.raises(UserError, match="fractions must be three shares"):
            train_val_test(family(10), fractions=fractions)
    with pytest.raises(UserError, match="no training program among the 2 programs"):
        train_val_test(family(2))
