"""Offline benchmark: table lookups, determinism across worker processes, the summary table,
plot data, presets and stored comparisons."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.compare import plots
from engine.compare.presets import preset
from engine.compare.run import run_benchmark, run_seed
from engine.compare.summary import (
    COLUMNS,
    PAPER_LAPLACIAN,
    summary_records,
    summary_table,
    with_paper,
)
from engine.errors import UserError
from storage import Store
from storage.comparisons import (
    delete_comparison,
    list_comparisons,
    load_comparison,
    save_comparison,
)
from tests.strategies_support import OPTIMUM, small_table

# Starts process pools: after make test's parallel phase, alone (a spawned pool worker hung inside a test worker).
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def table():
    return small_table()


@pytest.fixture(scope="module")
def comparison(table):
    return run_benchmark(table, ["RS", "GS", "DLMT"], reps=6, budget=20, jobs=1, seed=3)


def test_progress_is_said_after_every_run(table):
    said: list[tuple[int, int, str]] = []
    run_benchmark(table, ["RS", "DLMT"], reps=3, budget=20, seed=3, progress=lambda *args: said.append(args))
    assert said == [(1, 6, "RS"), (2, 6, "RS"), (3, 6, "RS"), (4, 6, "DLMT"), (5, 6, "DLMT"), (6, 6, "DLMT")]


def test_table_lookup_and_slowdown(table):
    ok = table.table[table.table["status"] == "ok"]
    index = table.domain.from_frame(ok.iloc[:5])
    values, statuses = table.evaluate(np.vstack([index, [[5, 7, 1, 2]]]))
    np.testing.assert_allclose(values[:5], ok["value"].to_numpy()[:5])
    assert list(statuses) == ["ok"] * 5 + ["invalid"] and math.isnan(values[5])
    assert table.optimum == pytest.approx(2.0)
    assert table.slowdown(3.0) == pytest.approx(1.5) and table.slowdown(None) == math.inf


def test_runs_are_deterministic_whatever_the_number_of_workers(table, comparison):
    said: list[tuple[int, int, str]] = []
    parallel = run_benchmark(table, ["RS", "GS", "DLMT"], reps=6, budget=20, jobs=2, seed=3,
                             progress=lambda *args: said.append(args))
    # every run is reported as it ends, not each chunk of runs (a slow strategy's chunk froze the bar)
    assert [done for done, _, _ in said] == list(range(1, 19)) and {total for _, total, _ in said} == {18}
    assert sorted(name for _, _, name in said) == sorted(["RS", "GS", "DLMT"] * 6)
    cols = ["strategy", "rep", "seed", "slowdown", "budget_used"]
    assert parallel.runs[cols].equals(comparison.runs[cols])
    alone = run_benchmark(table, ["DLMT"], reps=6, budget=20, seed=3)
    assert alone.runs["slowdown"].tolist() == comparison.runs.loc[comparison.runs["strategy"] == "DLMT", "slowdown"].tolist()
    assert run_seed(3, "RS", 0) != run_seed(3, "RS", 1) != run_seed(4, "RS", 1)


def test_a_run_stops_at_the_target_with_the_trace_it_had_until_then(table, comparison):
    """``stop_at``: the same runs, cut once the best comes within the slowdown (a time-to-target study), at the end
    of the batch that got there (RS asks its whole sample at once, DLMT a design)."""
    stopped = run_benchmark(table, ["RS", "GS", "DLMT"], reps=6, budget=20, jobs=1, seed=3, stop_at=1.2)
    assert stopped.params["stop_at"] == 1.2
    for (_, full), (_, cut) in zip(comparison.runs.iterrows(), stopped.runs.iterrows()):
        hits = [i for i, v in enumerate(full["trace"]) if v <= 1.2]
        length = len(cut["trace"])
        assert cut["trace"] == full["trace"][:length] and (hits[0] < length if hits else length == len(full["trace"]))
    assert (stopped.runs["budget_used"] < comparison.runs["budget_used"]).any()
    with pytest.raises(UserError, match="stop_at 0.5"):
        run_benchmark(table, ["RS"], reps=1, budget=5, stop_at=0.5)


def test_summary_table_columns_and_values(comparison):
    summary = summary_table(comparison)
    assert list(summary.columns) == COLUMNS
    assert list(summary["strategy"]) == ["RS", "GS", "DLMT"]
    for _, row in summary.iterrows():
        runs = comparison.runs[comparison.runs["strategy"] == row["strategy"]]
        assert row["mean"] == pytest.approx(runs["slowdown"].mean())
        assert row["max"] == runs["slowdown"].max() and row["budget_max"] == runs["budget_used"].max() <= 20
        assert 1.0 <= row["min"] <= row["median"] <= row["max"]
        low, high = row["mean_low"], row["mean_high"]
        assert row["min"] <= low <= high <= row["max"] and low - 1e-12 <= row["mean"] <= high + 1e-12
    best = summary.loc[summary["mean"].idxmin(), "strategy"]
    assert summary.set_index("strategy").loc[best, "vs_best"] == "best"
    assert set(summary["vs_best"]) <= {"best", "within noise", "worse"}
    records = summary_records(summary)
    assert set(records["RS"]) == {"runs", "mean", "mean_low", "mean_high", "vs_best", "min", "max", "median",
                                  "budget_mean", "budget_max", "failed"}
    paper = with_paper(summary)
    assert paper.loc[paper["strategy"] == "RS", "paper_mean"].item() == PAPER_LAPLACIAN.set_index("strategy").loc["RS", "mean"]


def test_plot_data_and_figures(comparison):
    hist = plots.histogram_data(comparison.runs, bins=10)
    assert hist.groupby("strategy")["count"].sum().tolist() == [6, 6, 6]
    ecdf = plots.ecdf_data(comparison.runs)
    assert ecdf.groupby("strategy")["ecdf"].max().tolist() == [1.0, 1.0, 1.0]
    curves = plots.best_so_far_data(comparison.runs)
    rs = curves[curves["strategy"] == "RS"]
    assert rs["measurements"].max() == 20 and (np.diff(rs["median"].to_numpy()) <= 1e-12).all()
    scatter, ellipses = plots.budget_slowdown_data(comparison.runs)
    assert len(scatter) == 18 and set(ellipses["strategy"]) <= {"RS", "GS", "DLMT"}
    for fig in (plots.histogram_figure(hist), plots.ecdf_figure(ecdf), plots.best_so_far_figure(curves),
                plots.budget_slowdown_figure(scatter, ellipses)):
        assert len(fig.data) >= 3


def test_presets_and_bad_parameters(table):
    options, budgets = preset("paper", table.space)
    assert budgets["RS"] == 120 and "LHS" not in options  # Laplacian-only options stay off other tables
    assert preset("none", table.space) == ({}, {})
    with pytest.raises(UserError, match="--reps"):
        run_benchmark(table, ["RS"], reps=0)
    with pytest.raises(UserError, match="unknown option"):
        run_benchmark(table, ["RS"], reps=1, options={"GA": {"size": 3}})


def test_comparisons_are_stored_and_read_back(tmp_path, comparison):
    summary = summary_records(summary_table(comparison))
    with Store(tmp_path / "c.duckdb") as store:
        assert store.schema_version >= 2
        cid = save_comparison(store, name="small", study="small", params=comparison.params, summary=summary,
                              runs=comparison.runs)
        listed = list_comparisons(store)
        assert listed.loc[0, "id"] == cid and listed.loc[0, "runs"] == 18
        loaded = load_comparison(store, cid)
        assert loaded["params"]["strategies"] == ["RS", "GS", "DLMT"] and loaded["summary"]["RS"]["runs"] == 6
        runs = loaded["runs"]
        np.testing.assert_allclose(runs["slowdown"], comparison.runs["slowdown"])
        assert runs["trace"].map(len).tolist() == comparison.runs["budget_used"].tolist()
        assert runs.loc[0, "config"].keys() == OPTIMUM.keys()
        delete_comparison(store, cid)
        assert list_comparisons(store).empty
        with pytest.raises(UserError, match="not found"):
            load_comparison(store, cid)
