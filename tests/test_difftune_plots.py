"""The Simulator section's figures carry the data they were given (computed elsewhere, drawn here)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.surrogates.difftune.plots import error_histogram, scatter_figure, timeline_figure


def test_the_timeline_has_a_bar_per_instruction_and_iteration():
    timeline = pd.DataFrame({"iteration": [0, 0, 1, 1], "index": [0, 1, 0, 1], "asm": ["add", "imul", "add", "imul"],
                             "dispatched": [0, 0, 1, 1], "ready": [0, 1, 1, 4], "issued": [1, 2, 2, 5],
                             "executed": [2, 5, 3, 8], "retired": [3, 6, 6, 9]})
    figure = timeline_figure(timeline)
    bars = figure.data[0]
    assert list(bars.y) == ["[0,0] add", "[0,1] imul", "[1,0] add", "[1,1] imul"]
    assert list(bars.base) == [0, 0, 1, 1] and list(bars.x) == [4, 7, 6, 9]  # dispatch to retire, inclusive
    assert [trace.name for trace in figure.data[1:]] == ["issued", "executed"]


def test_scatter_and_histogram_have_one_trace_per_predictor_and_leave_out_what_cannot_be_drawn():
    predictions = pd.DataFrame({"hex": ["a", "b", "a", "b"], "predictor": ["mca", "mca", "ours", "ours"],
                                "cycles": [100.0, 300.0, np.nan, 150.0], "truth": [100.0, 200.0, 100.0, 200.0]})
    scatter = scatter_figure(predictions)
    assert [t.name for t in scatter.data] == ["mca", "ours", "exact"] and list(scatter.data[1].x) == [200.0]
    histogram = error_histogram(predictions)
    assert [t.name for t in histogram.data] == ["mca", "ours"]
    assert list(histogram.data[0].x) == [0.0, 0.5] and list(histogram.data[1].x) == [-0.25]
