"""The DiffTune learning section's figures: which opcode fields a learnt table moved (the data, then the heatmap),
the surrogate's training curves and the methods' learning curves."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.surrogates.difftune.learning_plots import (
    CHANGE_COLUMNS,
    ROW_FIELDS,
    changes_heatmap,
    search_curves_figure,
    table_changes,
    training_figure,
)
from engine.surrogates.difftune.params import OpParams, ParamTable

UNITS = (("P0", 1), ("P1", 1), ("P5", 1))
GROUPS = (("P01", ("P0", "P1")),)


def _table(rows: dict[str, OpParams]) -> ParamTable:
    return ParamTable(dispatch_width=4, rob_size=192, units=UNITS, groups=GROUPS, rows=rows)


START = _table({"ADD": OpParams(1, 1, port_cycles=(("P0", 1),)), "MUL": OpParams(1, 3, port_cycles=(("P1", 1),)),
                "MOV": OpParams(1, 1), "NOP": OpParams(1, 0)})
LEARNED = _table({"ADD": OpParams(2, 1, port_cycles=(("P0", 1),)),           # moved by 1
                  "MUL": OpParams(1, 5, (0, 2, 0, 0, 0, 0, 0), (("P5", 2),)),  # latency +2, ra1 +2, P1 -1, P5 +2: 7
                  "MOV": OpParams(1, 1), "NOP": OpParams(1, 0),               # unchanged
                  "NEW": OpParams(9, 9)})                                     # not in the start: nothing to compare


def test_changes_rank_the_opcodes_that_moved_most_over_the_fields_they_use():
    changes = table_changes(LEARNED, START)
    assert list(changes.columns) == CHANGE_COLUMNS
    assert list(dict.fromkeys(changes["key"])) == ["MUL", "ADD"]  # most moved first; unchanged and new rows left out
    assert list(dict.fromkeys(changes["field"])) == [*ROW_FIELDS, "P0", "P1", "P5"]  # the unused P01 left out
    assert (changes["change"] == changes["learned"] - changes["start"]).all()
    mul = changes[changes["key"] == "MUL"].set_index("field")
    assert mul.loc["latency", ["start", "learned", "change"]].tolist() == [3, 5, 2]
    assert mul.loc["P1", "change"] == -1 and mul.loc["P5", "change"] == 2 and mul.loc["ra1", "change"] == 2
    assert changes.groupby("key", sort=False)["change"].apply(lambda c: c.abs().sum()).to_dict() == {"MUL": 7, "ADD": 1}
    assert table_changes(LEARNED, START, top=1)["key"].unique().tolist() == ["MUL"]


def test_identical_tables_have_no_changes_and_an_explained_empty_heatmap():
    changes = table_changes(START, START)
    assert changes.empty and list(changes.columns) == CHANGE_COLUMNS
    figure = changes_heatmap(changes)
    assert not figure.data and "No opcode row differs" in figure.layout.annotations[0].text


def test_the_heatmap_is_centred_at_zero_and_hovers_both_values():
    figure = changes_heatmap(table_changes(LEARNED, START))
    (heat,) = figure.data
    assert list(heat.y) == ["MUL", "ADD"] and list(heat.x)[:2] == ["uops", "latency"]
    assert heat.zmid == 0 and heat.zmin == -heat.zmax == -2
    z = np.asarray(heat.z)
    assert z[0, list(heat.x).index("latency")] == 2 and z[1, 0] == 1  # MUL's latency, ADD's µops
    assert np.asarray(heat.customdata)[0, list(heat.x).index("latency")].tolist() == [3, 5]
    assert "%{customdata[0]} → %{customdata[1]}" in heat.hovertemplate


def test_training_figure_draws_loss_moving_average_and_one_validation_point_per_epoch():
    history = pd.DataFrame({"epoch": [1, 1, 2, 2], "step": [1, 2, 3, 4], "loss": [0.5, 0.4, 0.3, 0.2],
                            "ema": [0.5, 0.45, 0.4, 0.35], "val_mape": [np.nan, 0.42, np.nan, 0.33]})
    figure = training_figure(history)
    loss, ema, val = figure.data
    assert list(loss.y) == [0.5, 0.4, 0.3, 0.2] and list(ema.y) == [0.5, 0.45, 0.4, 0.35]
    assert list(val.x) == [2, 4] and list(val.y) == [0.42, 0.33]
    assert len(training_figure(history.iloc[:0]).data) == 3  # an untrained surrogate: empty traces, no error


def test_search_curves_put_difftune_steps_and_searches_calls_on_their_own_axes():
    curves = {"DiffTune (random start)": [{"step": 1, "epoch": 1, "loss": 0.6}, {"step": 2, "epoch": 1, "loss": 0.4}],
              "greedy": pd.DataFrame({"calls": [10, 20], "mape": [0.5, 0.3]}),
              "RS search (random start)": [{"calls": 5, "mape": 0.7}]}
    figure = search_curves_figure(curves)
    by_name = {trace.name: trace for trace in figure.data}
    assert set(by_name) == set(curves)
    assert by_name["DiffTune (random start)"].xaxis == "x" and list(by_name["DiffTune (random start)"].y) == [0.6, 0.4]
    assert by_name["greedy"].xaxis == "x2" and list(by_name["greedy"].x) == [10, 20]
    assert len({trace.line.color for trace in figure.data}) == 3
