"""Measured ground truth's noise: a run's noise figure and busy verdict, and the noise-gated median per block."""

import math

import numpy as np
import pandas as pd
import pytest

from engine.io.paths import REPO_ROOT
from engine.surrogates.difftune.metrics import accuracy
from engine.surrogates.difftune.noise import GAP_LIMIT, GATE, VOTING_PASSES, half_truths, read_measured, robust_truth, run_noise


def results(minima, medians, clean=63, status="ok", hexes=None):
    n = len(minima)
    return pd.DataFrame({"hex": hexes or [f"b{i}" for i in range(n)], "status": [status] * n,
                         "cycles100": minima, "cycles100_median": medians,
                         "clean_a": [[1] * clean] * n, "clean_b": [[1] * clean] * n})


def test_a_quiet_run_is_trusted_and_its_figure_is_the_median_gap():
    quiet = run_noise(results([100.0, 200.0, 300.0], [100.5, 201.0, 303.0]), repeats=64)
    assert not quiet.busy and quiet.blocks == 3 and quiet.kept == 1.0
    assert quiet.gap == pytest.approx(1.0 / 201.0)
    assert "WARNING" not in quiet.summary()


def test_a_busy_run_is_flagged_with_each_reason():
    inflated = run_noise(results([100.0, 200.0, 300.0], [110.0, 220.0, 330.0]), repeats=64)
    assert inflated.busy and inflated.reasons[0].startswith("median gap 9.09%")
    assert "WARNING: the machine was too busy" in inflated.summary()
    interrupted = run_noise(results([100.0], [100.0], clean=40), repeats=64)
    assert interrupted.busy and "repetitions clean" in interrupted.reasons[0]
    frame = pd.concat([results([100.0] * 10, [100.0] * 10), results([math.nan], [math.nan], status="noisy", hexes=["n"])])
    disturbed = run_noise(frame, repeats=64)
    assert disturbed.busy and disturbed.noisy == 1 and "disturbed batches" in disturbed.reasons[0]


def test_a_second_pass_is_compared_with_the_first():
    first = pd.DataFrame({"hex": ["b0", "b1", "x"], "status": ["ok", "ok", "ok"], "cycles_min": [100.0, 200.0, 5.0],
                          "cycles_median": [100.0, 200.0, 5.0]})
    second = run_noise(results([100.0, 210.0], [110.0, 200.0]), repeats=64, first_pass=first)
    assert second.compared == 2
    assert second.pass_mape_median == pytest.approx(0.05) and second.pass_mape_min == pytest.approx(0.025)
    assert "against pass 1 (2 blocks)" in second.summary()


def test_the_truth_is_the_median_where_the_passes_agree_else_the_smallest_minimum():
    table = pd.DataFrame({
        "hex": ["agree", "disagree", "one pass quiet", "one pass busy", "failed"],
        "status": ["ok", "ok", "ok", "ok", "fault"],
        "cycles_min": [99.0, 95.0, 99.0, 90.0, np.nan], "cycles_median": [100.0, 100.0, 100.0, 100.0, np.nan],
        "status_p2": ["ok", "ok", np.nan, np.nan, np.nan],
        "cycles_min_p2": [100.0, 97.0, np.nan, np.nan, np.nan], "cycles_median_p2": [102.0, 120.0, np.nan, np.nan, np.nan],
    })
    truth = robust_truth(table).set_index("hex")
    assert "failed" not in truth.index
    assert truth.loc["agree", "cycles"] == 101.0 and truth.loc["agree", "statistic"] == "median"
    assert truth.loc["agree", "noise"] == pytest.approx(2 / 101)
    assert truth.loc["disagree", "cycles"] == 95.0 and truth.loc["disagree", "statistic"] == "minimum"
    assert truth.loc["one pass quiet", "statistic"] == "median" and truth.loc["one pass quiet", "passes"] == 1
    assert truth.loc["one pass busy", "cycles"] == 90.0  # its median sits 10% above its minimum
    assert GATE > GAP_LIMIT  # a block may be noisier than a run's median block and still keep its median


def test_from_three_passes_on_the_passes_vote_with_their_minima():
    """A busy neighbour slows a whole run (every repetition), so one pass's minimum can sit anywhere: passes 2 and 4
    were slowed, pass 5's unroll b was slowed alone (a freak low difference); the median of the minima is the quiet
    value, where the smallest minimum would read the freak."""
    minima = {"": 49.2, "_p2": 84.8, "_p3": 49.2, "_p4": 76.5, "_p5": 16.4, "_p6": 49.2, "_p7": 49.0}
    columns = {"hex": ["block", "twice"]}
    for suffix, value in minima.items():
        twice = suffix in ("", "_p2")
        columns |= {f"status{suffix}": ["ok", "ok" if twice else "noisy"], f"cycles_min{suffix}": [value, value],
                    f"cycles_median{suffix}": [value * 1.2, value]}
    truth = robust_truth(pd.DataFrame(columns)).set_index("hex")
    assert truth.loc["block", "passes"] == 7 >= VOTING_PASSES
    assert truth.loc["block", "cycles"] == 49.2 and truth.loc["block", "statistic"] == "median of minima"
    assert truth.loc["block", "noise"] == pytest.approx(0.2 / 49.2)  # deviations 0, 35.6, 0, 27.3, 32.8, 0, 0.2
    assert truth.loc["twice", "passes"] == 2 and truth.loc["twice", "statistic"] == "minimum"  # medians 49.2, 84.8


def test_a_table_without_medians_is_refused():
    with pytest.raises(ValueError, match="cycles_median"):
        robust_truth(pd.DataFrame({"hex": ["a"], "cycles_min": [1.0]}))


def test_the_committed_amd_truth_is_the_vote_of_its_24_passes_and_holds_to_1pct_between_halves():
    """data/difftune/README.md's figures for amd-25-1-1: every block's truth is the median of its passes' minima,
    and the truth of 12 passes against that of the other 12 moves by about 1% MAPE (τ above 0.97)."""
    rows = read_measured(REPO_ROOT / "data" / "difftune" / "amd-25-1-1.csv.gz")
    truth = robust_truth(rows)
    assert len(truth) >= 24_900 and (truth["statistic"] == "median of minima").all() and truth["passes"].min() >= 10
    halves = half_truths(rows)
    score = accuracy(halves["odd"], halves["even"])
    assert score.n >= 24_900 and score.mape < 0.012 and score.kendall_tau > 0.97 and score.within_5pct > 0.93
