"""DiffTune's surrogate: canonical tokens, the featuriser's tensors, gradients into the parameter rows,
training that learns, resuming that changes nothing, and the split by block."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.errors import UserError
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.encoding import encode
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.surrogate import Featuriser, ParamLstm, SurrogateConfig, capacities, feature_names
from engine.surrogates.difftune.tokens import PAD, UNK, Vocabulary, block_tokens
from engine.surrogates.difftune.train import Samples, device_of, load_surrogate, split_blocks, train
from tests.helpers.difftune_tiny import MODEL, TINY, tiny_blocks, tiny_samples


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return tiny_blocks()


@pytest.fixture(scope="module")
def samples(blocks: list[Block]) -> Samples:
    return tiny_samples(blocks)


def test_tokens_follow_ithemals_canonical_form(blocks: list[Block]) -> None:
    add, load_op, store_load = blocks[0], blocks[1], blocks[2]
    assert block_tokens(add) == [["ADD", "<SRCS>", "RBX.q", "RAX.q", "<DSTS>", "RBX.q", "EFLAGS", "<END>"]]
    assert block_tokens(load_op)[0] == ["ADD", "<SRCS>", "RBX.q", "<MEM>", "RSI.q", "</MEM>", "<DSTS>", "RBX.q", "EFLAGS", "<END>"]
    assert block_tokens(store_load) == [["MOV", "<SRCS>", "RAX.q", "<DSTS>", "<MEM>", "RDI.q", "</MEM>", "<END>"],
                                        ["MOV", "<SRCS>", "<MEM>", "RDI.q", "</MEM>", "<DSTS>", "R8.q", "<END>"]]
    pop = block_tokens(blocks[7])[0]  # implicit RSP read and written
    assert pop == ["POP", "<SRCS>", "RSP.q", "<DSTS>", "RBX.q", "RSP.q", "<END>"]
    displaced = block_tokens(blocks[10])[0]
    assert displaced[:7] == ["MOV", "<SRCS>", "<MEM>", "RSP.q", "<DISP>", "</MEM>", "<DSTS>"]


def test_vocabulary_round_trips_and_maps_unknown_tokens(blocks: list[Block], tmp_path) -> None:
    vocab = Vocabulary.build(blocks[:3])
    assert vocab.tokens[:2] == (PAD, UNK) and len(set(vocab.tokens)) == len(vocab)
    vocab.save(tmp_path / "vocab.json")
    assert Vocabulary.load(tmp_path / "vocab.json") == vocab
    ids = vocab.encode([blocks[3]])[0][0]  # IMUL is not in the first three blocks
    assert ids[0] == 1 and all(i > 0 for i in ids)


def test_featuriser_pads_and_gradients_reach_the_parameter_rows(blocks: list[Block]) -> None:
    featuriser = Featuriser(Vocabulary.build(blocks), MODEL.resources)
    chosen = [blocks[0], blocks[11], blocks[0]]
    tables = [sample_table({x.key for x in b.instructions}, MODEL, s) for s, b in enumerate(chosen)]
    tokens, block_of, rows, globals_ = featuriser.batch(chosen, tables)
    assert featuriser.features == len(feature_names(MODEL.resources)) == 5 + 7 + 2
    assert tokens.ids.shape[:2] == (2, 4) and tokens.lengths.tolist() == [1, 4] and block_of.tolist() == [0, 1, 0]
    assert tokens.token_counts[0].tolist() == [8, 0, 0, 0] and int(tokens.ids[0, 1:].abs().sum()) == 0
    assert rows.shape == (3, 4, featuriser.features) and float(rows[0, 1:].abs().sum()) == 0
    assert globals_.tolist()[1] == [tables[1].dispatch_width, tables[1].rob_size]
    network = ParamLstm(SurrogateConfig(len(featuriser.vocabulary), featuriser.features, 8, 8, 2))
    rows.requires_grad_(True)
    globals_.requires_grad_(True)
    predicted = network(tokens, block_of, rows, globals_)
    assert predicted.shape == (3,) and bool((predicted > 0).all())
    predicted.sum().backward()
    assert float(rows.grad[:, 0].abs().sum()) > 0 and float(globals_.grad.abs().sum()) > 0
    assert float(rows.grad[0, 1:].abs().sum()) == 0  # padding rows do not count


def test_split_is_deterministic_and_by_block() -> None:
    train_b, val_b, test_b = split_blocks(100, seed=3)
    assert (len(train_b), len(val_b), len(test_b)) == (80, 10, 10)
    assert sorted(np.concatenate([train_b, val_b, test_b]).tolist()) == list(range(100))
    again = split_blocks(100, seed=3)
    assert all((a == b).all() for a, b in zip((train_b, val_b, test_b), again))
    assert not (split_blocks(100, seed=4)[0] == train_b).all()


def test_training_lowers_the_loss(samples: Samples, tmp_path) -> None:
    _, history = train(samples, tmp_path, epochs=3, config=TINY)
    assert list(history.columns[:5]) == ["epoch", "step", "loss", "ema", "val_mape"]
    first, last = history[history["epoch"] == 1]["loss"].mean(), history[history["epoch"] == 3]["loss"].mean()
    assert last < first
    assert history.dropna(subset=["val_mape"])["epoch"].tolist() == [1, 2, 3]


def test_resuming_equals_training_without_a_stop(samples: Samples, tmp_path) -> None:
    whole, _ = train(samples, tmp_path / "whole", epochs=2, config=TINY)
    train(samples, tmp_path / "parts", epochs=1, config=TINY)
    resumed, history = train(samples, tmp_path / "parts", epochs=2, config=TINY)
    for name, value in whole.network.state_dict().items():
        assert torch.equal(value, resumed.network.state_dict()[name]), name
    assert history["epoch"].max() == 2
    loaded = load_surrogate(tmp_path / "parts")
    assert loaded.featuriser.vocabulary == resumed.featuriser.vocabulary
    table = samples.table(0, 0)
    assert np.allclose(loaded.predict([samples.blocks[0]], [table]), resumed.predict([samples.blocks[0]], [table]))


def test_encoded_batches_are_the_featurisers_tensors(samples: Samples) -> None:
    """The tensors training gathers per batch equal what the featuriser builds block by block, and drawing the
    tables on worker processes changes nothing."""
    featuriser = Featuriser(Vocabulary.build(samples.blocks), MODEL.resources)
    encoded = encode(samples.frame, samples.blocks, MODEL, featuriser)
    assert len(encoded) == len(samples.frame)
    index = np.array([5, 0, 41, 300, 5, 599, 17])
    (tokens, block_of, rows, globals_), cycles = encoded.batch(index)
    picked = samples.frame.iloc[index]
    chosen = [samples.blocks[b] for b in picked["block"]]
    want_tokens, want_block_of, want_rows, want_globals = featuriser.batch(
        chosen, [samples.table(b, s) for b, s in zip(picked["block"], picked["seed"])])
    for got, want in ((tokens.ids, want_tokens.ids), (tokens.token_counts, want_tokens.token_counts),
                      (tokens.lengths, want_tokens.lengths)):
        assert torch.equal(got[block_of], want[want_block_of])
    assert torch.equal(rows, want_rows) and torch.equal(globals_, want_globals)
    assert cycles.tolist() == picked["cycles"].astype(float).tolist()
    many = encode(samples.frame, samples.blocks, MODEL, featuriser, workers=2)
    assert torch.equal(many.rows, encoded.rows) and torch.equal(many.offset, encoded.offset)


def test_a_device_this_machine_lacks_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match="device: 'gpu0'"):
        device_of("gpu0")
    with pytest.raises(UserError, match="device: 'meta' is not supported"):
        device_of("meta")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="sees no CUDA GPU"):
            device_of("cuda")
    assert device_of(None).type == "cpu"


def test_the_throughput_bound_comes_from_theta_and_ignores_padding(blocks: list[Block]) -> None:
    """dispatch = 100 · Σ µops ÷ width and busiest = 100 · max over columns of Σ cycles ÷ units, per block, with
    gradients into the rows and the width; a group column counts its members' units."""
    featuriser = Featuriser(Vocabulary.build(blocks), MODEL.resources)
    chosen = [blocks[0], blocks[11]]  # 1 and 4 instructions
    tables = [sample_table({x.key for x in b.instructions}, MODEL, s) for s, b in enumerate(chosen, start=3)]
    tokens, block_of, rows, globals_ = featuriser.batch(chosen, tables)
    assert capacities(MODEL) == (1.0, 1.0, 1.0, 1.0, 2.0)  # P0..P5, then the group P01
    network = ParamLstm(SurrogateConfig(len(featuriser.vocabulary), featuriser.features, 8, 8, 1, capacities(MODEL)))
    rows.requires_grad_(True)
    globals_.requires_grad_(True)
    dispatch, busiest = network.bounds(rows, globals_, tokens.lengths[block_of])
    for b, (block, table) in enumerate(zip(chosen, tables)):
        keys = [i.key for i in block.instructions]
        uops = sum(table.rows[k].uops for k in keys)
        pressure = {u: sum(dict(table.rows[k].port_cycles).get(u, 0) for k in keys) for u, _ in MODEL.units}
        assert float(dispatch[b].detach()) == pytest.approx(max(100 * uops / table.dispatch_width, 1))
        assert float(busiest[b].detach()) == pytest.approx(max(100 * max(pressure.values()), 1))
    (dispatch.sum() + busiest.sum()).backward()
    assert float(globals_.grad[:, 0].abs().sum()) > 0 and float(rows.grad.abs().sum()) > 0
    assert float(rows.grad[0, 1:].abs().sum()) == 0  # the 1-instruction block's padding does not count
    predicted = network(tokens, block_of, rows.detach(), globals_.detach())
    assert bool((predicted > 0).all())


def test_a_checkpoint_from_before_the_bound_loads_without_it(samples: Samples, tmp_path) -> None:
    old = replace(TINY, bound=False)
    trained, _ = train(samples, tmp_path, epochs=1, config=old)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    del checkpoint["config"]["bound"]  # what a checkpoint written before the bound holds
    torch.save(checkpoint, tmp_path / "checkpoint.pt")
    loaded = load_surrogate(tmp_path)
    assert loaded.network.config.capacities == () and loaded.network.head.in_features == TINY.hidden
    table = samples.table(0, 0)
    assert np.allclose(loaded.predict([samples.blocks[0]], [table]), trained.predict([samples.blocks[0]], [table]))
    bounded, _ = train(samples, tmp_path / "bounded", epochs=1, config=TINY)
    assert bounded.network.config.capacities == capacities(MODEL) and bounded.network.head.in_features == TINY.hidden + 2
