"""The simulator's calibration as a tuning study: parameters become factors and back, Tunelab's strategies never
end worse than the start and stay within budget, and the exhaustive grid is a table study the Compare page can
replay."""

from __future__ import annotations

import numpy as np
import pytest

from engine.compare.replay import BenchTable
from engine.errors import UserError
from engine.strategies import drive, make_strategy
from engine.surrogates.difftune.calibration import (
    apply,
    calibrate,
    calibration_space,
    calibration_table,
    default_parameters,
)
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.metrics import accuracy
from engine.surrogates.difftune.params import OpParams, ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate
from tests.helpers.difftune_tiny import MODEL, tiny_blocks

ZERO = "XOR32rr@zero"  # a key whose factor name needs mapping


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return tiny_blocks()


@pytest.fixture(scope="module")
def problem(blocks: list[Block]) -> tuple[np.ndarray, ParamTable]:
    """Truth from one §3 sample, start from another (with a latency outside §3's range)."""
    keys = {i.key for b in blocks for i in b.instructions}
    truth = simulate(blocks, sample_table(keys, MODEL, seed=7))
    start = sample_table(keys, MODEL, seed=1)
    return truth, start.with_rows({**start.rows, ZERO: OpParams(1, 9, port_cycles=(("P01", 1),))})


def _mape(blocks: list[Block], table: ParamTable, truth: np.ndarray) -> float:
    return accuracy(simulate(blocks, table), truth).mape


def test_default_parameters_are_the_globals_and_the_most_widespread_keys(
        blocks: list[Block], problem: tuple[np.ndarray, ParamTable]) -> None:
    assert default_parameters(blocks, problem[1], k=2) == [
        "dispatch_width", "rob_size", "latency:ADD64rr", "uops:ADD64rr", "latency:IMUL64rr", "uops:IMUL64rr"]
    assert default_parameters(blocks, problem[1], k=0) == ["dispatch_width", "rob_size"]


def test_space_levels_and_names(problem: tuple[np.ndarray, ParamTable]) -> None:
    start = problem[1]
    space = calibration_space(start, ["dispatch_width", "rob_size", f"latency:{ZERO}", f"port:{ZERO}:P01", "uops:ADD64rr"])
    assert space.names == ["dispatch_width", "rob_size", "latency__XOR32rr_zero", "port__XOR32rr_zero__P01",
                           "uops__ADD64rr"]
    levels = {f.name: f.levels for f in space.factors}
    assert levels["dispatch_width"] == tuple(range(1, 11))
    assert levels["rob_size"] == tuple(sorted({50, 100, 150, 200, 250, start.rob_size}))
    assert levels["latency__XOR32rr_zero"] == (0, 1, 2, 3, 4, 5, 9)  # §3's range and the start's value
    assert levels["port__XOR32rr_zero__P01"] == (0, 1, 2)
    assert levels["uops__ADD64rr"] == (1, 2, 3, 4, 5)


def test_apply_maps_a_configuration_back_to_rows_and_globals(problem: tuple[np.ndarray, ParamTable]) -> None:
    start = problem[1]
    config = {"dispatch_width": 3, "rob_size": 50, "latency__XOR32rr_zero": 2, "port__XOR32rr_zero__P01": 0,
              "port__XOR32rr_zero__P5": 2, "uops__ADD64rr": 4}
    table = apply(start, config)
    assert (table.dispatch_width, table.rob_size) == (3, 50)
    assert table.rows[ZERO] == OpParams(1, 2, port_cycles=(("P5", 2),))
    assert table.rows["ADD64rr"].uops == 4 and table.rows["ADD64rr"].latency == start.rows["ADD64rr"].latency
    assert {k: r for k, r in table.rows.items() if k not in (ZERO, "ADD64rr")} == {
        k: r for k, r in start.rows.items() if k not in (ZERO, "ADD64rr")}
    by_name = {"dispatch_width": 3, "rob_size": 50, f"latency:{ZERO}": 2, f"port:{ZERO}:P01": 0, f"port:{ZERO}:P5": 2,
               "uops:ADD64rr": 4}
    assert apply(start, by_name) == table
    space = calibration_space(start, list(by_name))
    assert apply(start, {f.name: f.levels[f.index_of([v])[0]] for f, v in zip(space.factors, config.values())}) == table
    assert apply(start, {}) == start


@pytest.mark.parametrize(("call", "field", "value"), [
    pytest.param(lambda s: calibration_space(s, ["latency:NOPE"]), "parameters", "latency:NOPE", id="unknown key"),
    pytest.param(lambda s: calibration_space(s, ["speed"]), "parameters", "speed", id="unknown field"),
    pytest.param(lambda s: calibration_space(s, ["port:ADD64rr:P9"]), "parameters", "P9", id="unknown resource"),
    pytest.param(lambda s: calibration_space(s, ["uops:ADD64rr", "uops:ADD64rr"]), "parameters", "uops:ADD64rr",
                 id="twice"),
    pytest.param(lambda s: calibration_space(s, []), "parameters", "[]", id="none"),
    pytest.param(lambda s: apply(s, {"latency__NOPE": 1}), "config", "latency__NOPE", id="unknown factor"),
    pytest.param(lambda s: apply(s, {"uops:ADD64rr": 0}), "uops:ADD64rr", "0", id="below the floor"),
])
def test_bad_parameters_are_one_line_naming_the_field_and_value(
        problem: tuple[np.ndarray, ParamTable], call: object, field: str, value: str) -> None:
    with pytest.raises(UserError) as caught:
        call(problem[1])  # type: ignore[operator]
    message = str(caught.value)
    assert message.startswith(f"{field}:") and value in message and "\n" not in message


@pytest.mark.parametrize("strategy", ["RS", "BO"])
def test_calibrate_never_ends_worse_stays_in_budget_and_repeats(
        blocks: list[Block], problem: tuple[np.ndarray, ParamTable], strategy: str) -> None:
    truth, start = problem
    parameters = default_parameters(blocks, start, k=1)  # BO: 8 random starts, then 3 steps of its model
    budget = len(blocks) * 12 + 7
    said: list[tuple[int, float]] = []
    found = calibrate(blocks, truth, start, parameters, strategy, budget, seed=3,
                      on_progress=lambda calls, best: said.append((calls, best)))
    history = found.history
    assert said and said[-1] == (found.calls, pytest.approx(history["mape"].iloc[-1]))  # the live figures are the result's
    assert all(a[0] < b[0] and a[1] >= b[1] for a, b in zip(said, said[1:]))
    assert found.calls <= budget and found.calls == len(blocks) * len(history) == history["calls"].iloc[-1]
    assert history["mape"].iloc[0] == pytest.approx(_mape(blocks, start, truth))
    assert (np.diff(history["mape"]) <= 0).all()
    assert _mape(blocks, found.table, truth) == pytest.approx(history["mape"].iloc[-1])
    assert history["mape"].iloc[-1] <= history["mape"].iloc[0]
    again = calibrate(blocks, truth, start, parameters, strategy, budget, seed=3)
    assert again.table == found.table and again.history.equals(history)
    with pytest.raises(UserError, match="^budget:"):
        calibrate(blocks, truth, start, parameters, strategy, len(blocks) - 1)


def test_calibration_table_is_a_replayable_table_study(blocks: list[Block], problem: tuple[np.ndarray, ParamTable]) -> None:
    truth, start = problem
    parameters = ["dispatch_width", "latency:ADD64rr"]
    spec, frame = calibration_table(blocks, truth, start, parameters, name="calibration grid")
    space = calibration_space(start, parameters)
    assert spec.objective == "mape" and spec.direction == "minimize" and spec.runner["kind"] == "table"
    assert list(frame.columns) == [*space.names, "value", "status", "error"] and len(frame) == space.size
    assert (frame["status"] == "ok").all() and frame["error"].isna().all()
    exhaustive = [_mape(blocks, apply(start, row), truth) for row in space.enumerate().to_dict("records")]
    bench = BenchTable(spec, frame)
    assert bench.optimum == pytest.approx(min(exhaustive))
    replay = drive(make_strategy("RS", bench.domain, 15, seed=0), bench.evaluate)
    assert replay.used == 15 and replay.best_value is not None and replay.best_value >= bench.optimum
    with pytest.raises(UserError, match="^parameters: their grid has 5,400 configurations, more than 5,000"):
        calibration_table(blocks, truth, start, default_parameters(blocks, start, k=2)[1:], name="too big")
