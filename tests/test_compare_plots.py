"""The Compare page's figures and table headers: one distinct colour per strategy in every figure,
log axes labelled with plain round numbers, and headers in words."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from engine.compare import plots
from engine.compare.run import Comparison
from engine.compare.summary import COLUMNS, header, summary_table, with_paper

STRATEGIES = ["RS", "LHS", "GS", "GSR", "GA", "LM", "DOPT", "DLMT", "BO", "TPE", "RS2"]
PLAIN = re.compile(r"^[0-9][0-9,]*(\.[0-9]+)?$")


def fake_runs(strategies: list[str], reps: int = 6, budget: int = 30) -> pd.DataFrame:
    """Runs with slowdowns above 1 and monotone best-so-far traces."""
    rng = np.random.default_rng(0)
    rows = []
    for s, name in enumerate(strategies):
        for rep in range(reps):
            trace = np.minimum.accumulate(1 + rng.gamma(1 + s / 3, 5, budget))
            rows.append({"strategy": name, "rep": rep, "slowdown": float(trace[-1]),
                         "budget_used": int(budget - rng.integers(0, 5)), "trace": list(trace)})
    return pd.DataFrame(rows)


def figures(runs: pd.DataFrame, colours: dict[str, str] | None = None) -> dict:
    return {
        "histogram": plots.histogram_figure(plots.histogram_data(runs), colours=colours),
        "ecdf": plots.ecdf_figure(plots.ecdf_data(runs), colours=colours),
        "best so far": plots.best_so_far_figure(plots.best_so_far_data(runs), colours=colours),
        "budget": plots.budget_slowdown_figure(*plots.budget_slowdown_data(runs), colours=colours),
    }


def trace_colour(trace) -> str | None:
    colour = trace.marker.color if trace.type == "bar" or trace.mode == "markers" else trace.line.color
    return colour if isinstance(colour, str) else None


def test_eleven_strategies_get_eleven_distinct_colours_in_every_figure():
    runs = fake_runs(STRATEGIES)
    for what, fig in figures(runs).items():
        legend = {t.name: trace_colour(t) for t in fig.data if t.showlegend is not False}
        assert list(legend) == STRATEGIES, what
        assert None not in legend.values() and len(set(legend.values())) == 11, (what, legend)
        for helper in (t for t in fig.data if t.showlegend is False):  # bands and ellipses wear their strategy's colour
            assert helper.line.color == legend[helper.legendgroup], what


def test_a_strategy_keeps_its_colour_across_figures_when_another_has_nothing_to_show():
    runs = fake_runs(["RS", "GS", "DLMT"])
    runs.loc[runs["strategy"] == "GS", "slowdown"] = math.inf  # GS found nothing: absent from some figures
    runs.loc[runs["strategy"] == "GS", "trace"] = pd.Series([[math.inf]] * 6, index=runs.index[runs["strategy"] == "GS"])
    colours = plots.strategy_colours(["RS", "GS", "DLMT"])
    assert len(set(colours.values())) == 3 and len(plots.PALETTE) >= 10
    for what, fig in figures(runs, colours).items():
        dlmt = [trace_colour(t) for t in fig.data if t.name == "DLMT"]
        assert dlmt == [colours["DLMT"]], what


@pytest.mark.parametrize("low, high", [(1.0, 1.0122), (1.0, 1.39), (1.0, 3.0), (1.0, 6.0), (1.0, 124.8),
                                       (0.5, 0.9), (2.0, 2.0), (1.0, 1e6)])
def test_log_ticks_are_round_numbers_inside_the_range(low, high):
    ticks = plots.log_ticks(low, high)
    assert ticks and all(low <= t <= high for t in ticks) and ticks == sorted(ticks)
    assert len(ticks) >= (2 if high > low * 1.005 else 1) and len(ticks) <= 10
    assert all(len(f"{t:.12g}".replace(".", "").strip("0")) <= 4 for t in ticks)  # 1.1, 2, 50, 1.005: few digits


def test_log_axes_are_labelled_with_plain_numbers():
    runs = fake_runs(STRATEGIES[:7])
    figs = figures(runs)
    for axis in (figs["ecdf"].layout.xaxis, figs["best so far"].layout.yaxis):
        assert axis.type == "log" and axis.tickmode == "array"
        assert [t for t in axis.ticktext if not PLAIN.match(t)] == []
        assert len(axis.ticktext) >= 2


def test_summary_headers_read_as_words_and_the_data_keeps_its_names():
    runs = fake_runs(["RS", "DLMT"])
    comparison = Comparison(params={"strategies": ["RS", "DLMT"]}, runs=runs)
    shown = with_paper(summary_table(comparison))
    assert list(shown.columns[: len(COLUMNS)]) == COLUMNS  # stored and CLI names unchanged
    for column in shown.columns:
        label, tip = header(column)
        assert "_" not in label and label[0].isupper() and tip, column
    assert header("best_slowdown")[0] == "Best slowdown"
