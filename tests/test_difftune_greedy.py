"""Greedy per-parameter search on the real simulator: it recovers a perturbed latency, never raises the training
MAPE, stays within its budget of simulator calls and re-simulates only the blocks a row change can move."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.errors import UserError
from engine.surrogates.difftune import greedy
from engine.surrogates.difftune.calibration import Parameter, blocks_by_key, with_values
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import BOUNDS, N_SLOTS, OpParams, ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.simulate import simulate
from tests.helpers.difftune_tiny import MODEL, tiny_blocks

KEY = "ADD64rr"  # in 17 of the 30 blocks, often on a dependency chain


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return tiny_blocks()


@pytest.fixture(scope="module")
def truth_table(blocks: list[Block]) -> ParamTable:
    """A §3 sample without ReadAdvance, so every latency on a chain shows in the cycles."""
    sampled = sample_table({i.key for b in blocks for i in b.instructions}, MODEL, seed=7)
    return sampled.with_rows({k: replace(r, read_advance=(0,) * N_SLOTS) for k, r in sampled.rows.items()})


def _mape(blocks: list[Block], table: ParamTable, truth: np.ndarray) -> float:
    return float((np.abs(simulate(blocks, table) - truth) / truth).mean())


def test_recovers_a_single_perturbed_latency(blocks: list[Block], truth_table: ParamTable) -> None:
    truth = simulate(blocks, truth_table)
    right = truth_table.rows[KEY].latency
    start = with_values(truth_table, {Parameter("latency", KEY): right + 3})
    assert _mape(blocks, start, truth) > 0.05
    found = greedy.greedy_search(blocks, truth, start, budget=100_000)
    assert found.table.rows[KEY].latency == right
    assert simulate(blocks, found.table).tolist() == truth.tolist()
    assert found.history["mape"].iloc[-1] == 0
    # it stops at MAPE 0: the globals' candidates, then the latency's, and nothing after
    n, holders = len(blocks), len(blocks_by_key(blocks)[KEY])
    cost = n * (1 + len(greedy.candidates(Parameter("dispatch_width"), start.dispatch_width))
                + len(greedy.candidates(Parameter("rob_size"), start.rob_size)))
    assert found.calls <= cost + holders * len(greedy.candidates(Parameter("latency", KEY), right + 3))


@pytest.mark.parametrize("budget", [30, 31, 400, 5_000])
def test_never_worse_and_within_budget(blocks: list[Block], truth_table: ParamTable, budget: int) -> None:
    truth = simulate(blocks, truth_table)
    start = sample_table(truth_table.rows, MODEL, seed=1)
    said: list[tuple[int, float]] = []
    found = greedy.greedy_search(blocks, truth, start, budget, on_progress=lambda calls, best: said.append((calls, best)))
    history = found.history
    assert list(history.columns) == ["calls", "mape"]
    assert not said or said[-1] == (found.calls, history["mape"].iloc[-1])  # the live figures are the result's
    assert found.calls <= budget and history["calls"].iloc[-1] == found.calls
    assert (np.diff(history["calls"]) > 0).all() and (np.diff(history["mape"]) <= 0).all()
    assert history["mape"].iloc[0] == pytest.approx(_mape(blocks, start, truth))
    assert _mape(blocks, found.table, truth) == pytest.approx(history["mape"].iloc[-1], abs=1e-12)
    if budget == len(blocks):
        assert found.table == start and found.calls == budget


def test_calls_are_counted_exactly_and_only_holders_are_resimulated(
        blocks: list[Block], truth_table: ParamTable, monkeypatch: pytest.MonkeyPatch) -> None:
    truth = simulate(blocks, truth_table)
    start = sample_table(truth_table.rows, MODEL, seed=2)
    seen: list[list[str]] = []

    def counting(some: list[Block], table: ParamTable) -> np.ndarray:
        seen.append([b.hex for b in some])
        return simulate(some, table)

    monkeypatch.setattr(greedy, "simulate", counting)
    found = greedy.greedy_search(blocks, truth, start, budget=1_500)
    assert sum(map(len, seen)) == found.calls and len(seen) == len(found.history)
    holders = {tuple(blocks[i].hex for i in where) for where in blocks_by_key(blocks).values()}
    partial = [tuple(call) for call in seen if len(call) < len(blocks)]
    assert partial and set(partial) <= holders
    # a budget that pays for the start and the dispatch widths stops before the first ROB size
    widths = greedy.candidates(Parameter("dispatch_width"), start.dispatch_width)
    seen.clear()
    short = greedy.greedy_search(blocks, truth, start, budget=len(blocks) * (1 + len(widths)) + len(blocks) - 1)
    assert short.calls == len(blocks) * (1 + len(widths)) == sum(map(len, seen))


def test_a_sampled_search_decides_on_draws_counts_every_call_and_refreshes_stale_errors(
        blocks: list[Block], truth_table: ParamTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sample``: no re-simulation holds more blocks than the draw (bar the start's), the calls are exact, the
    table still improves, and a draw as large as every holder is the unsampled search."""
    truth = simulate(blocks, truth_table)
    start = sample_table(truth_table.rows, MODEL, seed=3)
    seen: list[int] = []

    def counting(some: list[Block], table: ParamTable) -> np.ndarray:
        seen.append(len(some))
        return simulate(some, table)

    monkeypatch.setattr(greedy, "simulate", counting)
    found = greedy.greedy_search(blocks, truth, start, budget=3_000, sample=5)
    assert seen[0] == len(blocks) and max(seen[1:]) <= 5 and sum(seen) == found.calls <= 3_000
    assert _mape(blocks, found.table, truth) < _mape(blocks, start, truth)
    monkeypatch.undo()
    whole = greedy.greedy_search(blocks, truth, start, budget=3_000)
    assert greedy.greedy_search(blocks, truth, start, budget=3_000, sample=len(blocks)).table == whole.table
    for sample in (0, -1, 2.5, True):
        with pytest.raises(UserError, match=r"^sample: "):
            greedy.greedy_search(blocks, truth, start, budget=3_000, sample=sample)  # type: ignore[arg-type]


def test_candidates_and_order() -> None:
    assert greedy.candidates(Parameter("latency", "K"), 3) == [2, 4, 1, 5, 0, 6]
    assert greedy.candidates(Parameter("uops", "K"), 1) == [2, 3, 4, 5]
    assert greedy.candidates(Parameter("latency", "K"), 20) == [19, 21, 18, 22, 10, 5, 4, 3, 2, 1, 0, 40]
    holders = {"A": np.arange(3), "B": np.arange(1), "C": np.arange(1), "D": np.arange(1)}
    start = MODEL.with_rows({k: OpParams(1, 1, port_cycles=(("P0", 1),)) for k in holders})
    orders = {tuple(p.name for p in greedy.visiting_order(holders, start, seed)) for seed in range(8)}
    for order in orders:
        assert order[:5] == ("dispatch_width", "rob_size", "latency:A", "uops:A", "port:A:P0")
        assert {order[i].split(":")[1] for i in (5, 8, 11)} == {"B", "C", "D"}
    assert len(orders) > 1  # the seed reorders keys found in equally many blocks
    forwarding = greedy.visiting_order(holders, replace(start, memory_forwarding=1), 0)  # visited on fed blocks only
    assert [p.name for p in forwarding[:4]] == ["dispatch_width", "rob_size", "forwarding_advance", "stack_forwarding_advance"]


def test_bad_input_is_one_line_naming_the_field(blocks: list[Block], truth_table: ParamTable) -> None:
    truth = simulate(blocks, truth_table)
    for args, field in [((blocks, truth[:-1], truth_table, 100), "truth"),
                        ((blocks, -truth, truth_table, 100), "truth"),
                        ((blocks, truth, truth_table, len(blocks) - 1), "budget"),
                        ((blocks, truth, truth_table.with_rows({}), 100), "start")]:
        with pytest.raises(UserError) as caught:
            greedy.greedy_search(*args)
        assert str(caught.value).startswith(f"{field}:") and "\n" not in str(caught.value)


def test_candidates_stay_within_the_table_bounds() -> None:
    """Doubling a 9,000-cycle latency would pass the table's 10,000 bound and make a table the simulator refuses."""
    assert max(greedy.candidates(Parameter("latency", "X"), 9000)) <= BOUNDS["latency"][1]
    assert max(greedy.candidates(Parameter("dispatch_width"), 64)) <= BOUNDS["dispatch_width"][1]
    assert min(greedy.candidates(Parameter("uops", "X"), 1)) >= 1
