"""DiffTune's parameter learning: the frozen surrogate is fitted through the table, the extraction is a valid
table, the network never changes, and a table of another resource model is refused."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.errors import UserError
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.learn import LearnConfig, _extract, block_keys, learn_table, random_start
from engine.surrogates.difftune.params import BOUNDS, N_SLOTS, OpParams, ParamTable
from engine.surrogates.difftune.simulate import simulate
from engine.surrogates.difftune.surrogate import Surrogate
from engine.surrogates.difftune.train import train
from tests.helpers.difftune_tiny import MODEL, TINY, tiny_blocks, tiny_samples


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return tiny_blocks()


@pytest.fixture(scope="module")
def surrogate(blocks: list[Block], tmp_path_factory: pytest.TempPathFactory) -> Surrogate:
    trained, _ = train(tiny_samples(blocks), tmp_path_factory.mktemp("surrogate"), epochs=2, config=TINY)
    return trained


def test_learning_fits_the_surrogate_to_the_truth(blocks: list[Block], surrogate: Surrogate) -> None:
    truth_table = random_start(blocks, MODEL, seed=7)
    truth = surrogate.predict(blocks, [truth_table] * len(blocks))  # a target the surrogate can reach exactly
    start = random_start(blocks, MODEL, seed=0)
    learned = learn_table(surrogate, blocks, truth, start, LearnConfig(batch=16, epochs=20))
    history = learned.history
    assert list(history.columns) == ["step", "epoch", "loss"] and history["step"].tolist() == list(range(1, len(history) + 1))
    assert history["loss"].tail(5).mean() < 0.9 * history["loss"].head(2).mean()
    before = np.abs(surrogate.predict(blocks, [start] * len(blocks)) - truth) / truth
    after = np.abs(surrogate.predict(blocks, [learned.table] * len(blocks)) - truth) / truth
    assert after.mean() < before.mean()


def test_extraction_is_a_valid_table_and_the_network_stays_frozen(blocks: list[Block], surrogate: Surrogate) -> None:
    weights = {k: v.clone() for k, v in surrogate.network.state_dict().items()}
    start = random_start(blocks, MODEL, seed=3)
    key = block_keys(blocks)[0]
    grouped = start.rows[key]
    extra = {"NOT_IN_BLOCKS": OpParams(2, 9)}
    start = start.with_rows({**start.rows, key: replace(grouped, port_cycles=(("P01", 3),)), **extra})
    truth = np.full(len(blocks), 250.0, dtype=np.float32)
    table = learn_table(surrogate, blocks, truth, start, LearnConfig(batch=8, epochs=3, lr=0.5)).table
    for name, value in surrogate.network.state_dict().items():
        assert torch.equal(value, weights[name]), name
    assert set(table.rows) == set(start.rows) and table.rows["NOT_IN_BLOCKS"] == OpParams(2, 9)
    assert dict(table.rows[key].port_cycles).get("P01") == 3  # group columns are never learnt
    assert all(r.uops >= 1 and r.latency >= 0 and min(r.read_advance) >= 0 for r in table.rows.values())
    assert table.dispatch_width >= 1 and table.rob_size >= 1 and table.units == MODEL.units
    assert table != start  # lr 0.5 for 3 epochs moves something


def test_validation_in_the_simulator_keeps_the_best_checked_table(blocks: list[Block], surrogate: Surrogate) -> None:
    truth_table = random_start(blocks, MODEL, seed=7)
    truth = simulate(blocks, truth_table).astype(float)
    start = random_start(blocks, MODEL, seed=0)
    checked: list[ParamTable] = []

    def validate(table: ParamTable) -> float:
        checked.append(table)
        return float(np.mean(np.abs(simulate(blocks, table) - truth) / truth))

    config = LearnConfig(batch=16, epochs=4, lr=0.5, validate_every=3)  # 2 steps per epoch: checks at 0, 3, 6, 8
    learned = learn_table(surrogate, blocks, truth, start, config, validate)
    assert learned.validation["step"].tolist() == [0, 3, 6, 8] and checked[0] is start
    best = int(learned.validation["mape"].idxmin())
    assert learned.table == checked[best] and validate(learned.table) == learned.validation["mape"].min()
    assert learned.validation["mape"].min() <= learned.validation["mape"].iloc[0]  # never worse than the start
    refusing = learn_table(surrogate, blocks, truth, start, config, lambda t: 0.0 if t is start else 1.0)
    assert refusing.table is start  # the surrogate's progress counts for nothing the simulator does not confirm


def test_bad_inputs_are_refused_in_one_line(blocks: list[Block], surrogate: Surrogate) -> None:
    start = random_start(blocks, MODEL)
    other = replace(start, units=(("Q0", 1),), groups=(), rows={k: OpParams(1, 1) for k in start.rows})
    with pytest.raises(UserError, match="resource model"):
        learn_table(surrogate, blocks, np.ones(len(blocks)), other)
    with pytest.raises(UserError, match="truth: 2 values for 30 blocks"):
        learn_table(surrogate, blocks, np.ones(2), start)
    with pytest.raises(UserError, match="positive"):
        learn_table(surrogate, blocks, np.zeros(len(blocks)), start)
    with pytest.raises(UserError, match="epochs: must be a positive integer, got 0"):
        LearnConfig(epochs=0)


def test_a_diverged_value_is_extracted_at_its_bound() -> None:
    """A learning run that diverged (huge, infinite or NaN entries) still yields a table the simulator accepts."""
    keys = ["ADD64rr", "IMUL64rr"]
    n_res = len(MODEL.resources)
    theta = np.zeros((len(keys), n_res + N_SLOTS + 2))
    theta[0, n_res + N_SLOTS + 1] = 1e12  # latency
    theta[1, n_res + N_SLOTS] = np.nan  # µops
    theta[1, 0] = -np.inf  # a unit's cycles
    table = _extract(theta, np.array([1e9, np.nan]), keys, MODEL)
    assert table.rows[keys[0]].latency == BOUNDS["latency"][1] and table.rows[keys[1]].uops == 1
    assert dict(table.rows[keys[1]].port_cycles).get(MODEL.resources[0]) == BOUNDS["port_cycles"][1]
    assert (table.dispatch_width, table.rob_size) == (BOUNDS["dispatch_width"][1], BOUNDS["rob_size"][0])


def test_an_extracted_table_keeps_the_start_model() -> None:
    """Only globals and rows are learnt: a Zen start's register files, buffers, queues and moves stay."""
    units = [u for u, _ in MODEL.units]
    start = replace(MODEL, eliminated_moves=("ADD64rr",), register_files=(("gpr", 192),),
                    buffers=(("S", 40, (units[0],)),), queues=(("load", 72),), retire_width=8)
    keys = ["ADD64rr"]
    table = _extract(np.ones((1, len(start.resources) + N_SLOTS + 2)), np.array([4.0, 100.0]), keys, start)
    assert (table.eliminated_moves, table.register_files, table.buffers, table.queues, table.retire_width) == (
        start.eliminated_moves, start.register_files, start.buffers, start.queues, 8)
