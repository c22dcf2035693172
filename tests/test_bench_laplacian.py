"""The paper's Laplacian benchmark on a sample of its repetitions (the full 1000 are `tunelab bench`'s
job, quoted in the closing note): DLMT's targets and the paper's GS counter."""

from __future__ import annotations

import pytest

from engine.compare.presets import PAPER_DLMT, preset
from engine.compare.replay import load_table
from engine.compare.run import run_benchmark

# Starts process pools: after make test's parallel phase, alone (a spawned pool worker hung inside a test worker).
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def laplacian(data):
    return load_table(data / "laplacian" / "search_space.csv", "time_per_pixel")


def test_dlmt_lands_within_ten_percent_of_the_optimum_on_under_sixty_measurements(laplacian):
    """The paper's protocol keeps its figures; Tunelab's default spends the budget and ends closer."""
    paper = run_benchmark(laplacian, ["DLMT"], reps=40, budget=125, jobs=2, seed=11, options={"DLMT": PAPER_DLMT}).runs
    assert paper["slowdown"].max() <= 1.10
    assert paper["slowdown"].mean() <= 1.02
    assert paper["budget_used"].mean() <= 60
    spent = run_benchmark(laplacian, ["DLMT"], reps=12, budget=125, jobs=2, seed=11).runs
    assert (spent["budget_used"] == 125).all() and spent["slowdown"].mean() <= paper["slowdown"].mean()


def test_gs_with_the_paper_counter_spends_the_paper_budgets(laplacian):
    options, budgets = preset("paper", laplacian.space)
    runs = run_benchmark(laplacian, ["GS"], reps=400, budget=125, jobs=1, seed=5, options=options, budgets=budgets).runs
    plain = {**options["GS"], "recount": False}
    fewer = run_benchmark(laplacian, ["GS"], reps=400, budget=125, jobs=1, seed=5, options={"GS": plain},
                          budgets=budgets).runs
    # the paper: 3-106, median 18, mean 22.17 (dlmt.md §4.5); the same walks without recounting cost less
    assert 20 <= runs["budget_used"].mean() <= 24.5 and 15 <= runs["budget_used"].median() <= 20
    assert fewer["budget_used"].mean() < runs["budget_used"].mean() - 1
    assert (runs["slowdown"] == fewer["slowdown"]).mean() > 0.95
