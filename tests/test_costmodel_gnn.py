"""The GNN cost model (costmodel.md §2) on synthetic tile, absolute and layout families small enough for CI.

The tile family is learnable only through the graph: runtime has an interior optimum in the tile size at half
the log size of the kernel's one ``dot`` node, so a model must read that node's feature through message
passing and pooling and combine it with the configuration.
"""

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from engine.errors import UserError
from engine.surrogates.costmodel.gnn import make_batch
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.metrics import kendall_tau
from engine.surrogates.costmodel.training import NODES_PER_THREAD, CostModel, listmle_loss, pairwise_loss, sized_threads

OPS = ("add", "multiply", "reduce", "broadcast", "convert")
#: Small and quick: 60 training graphs, 32 hidden units, one network (the ensemble has a test of its own); about 3 s
#: of one core per fit (graphs this small train on one thread: ``threads=None`` sizes them so).
QUICK = {"hidden": 32, "epochs": 40, "patience": 10, "lr": 3e-3, "members": 1}


def synthetic_graph(rng: np.random.RandomState, name: str, task: str = "tile", configs: int = 8, errors: int = 0) -> TensorGraph:
    """A random DAG of 5–12 ops with one ``dot``; runtime ∝ total size · (1 + 0.3 (tile − log2(dot size)/2)²) · 2% noise."""
    n = rng.randint(5, 13)
    ops = ["parameter", *rng.choice(OPS, n - 1)]
    ops[rng.randint(1, n)] = "dot"
    edges = [[i, j] for i in range(1, n) for j in rng.choice(i, min(i, rng.randint(1, 3)), replace=False)]
    size = 2.0 ** rng.uniform(4, 12, n)
    feat = np.column_stack([size, np.arange(n) == n - 1, rng.randint(0, 3, n)]).astype(np.float32)
    tiles = rng.choice(np.arange(1, 9), configs, replace=False)
    config = np.column_stack([2.0 ** tiles, 2.0 ** rng.randint(0, 4, configs)]).astype(np.float32)
    optimum = np.log2(size[ops.index("dot")]) / 2
    runtime = 0.1 * size.sum() * (1 + 0.3 * (tiles - optimum) ** 2) * np.exp(rng.normal(0, 0.02, configs))
    runtime[:errors] = np.nan
    return TensorGraph(name=name, program=name, task=task, opcodes=np.array(ops), node_feat=feat, feat_names=("size", "root", "kind"),
                       edges=np.array(edges, dtype=np.int64).reshape(-1, 2), node_splits=np.array([0]), config_feat=config,
                       runtime=runtime)


def family(seed: int, count: int, **kw) -> list[TensorGraph]:
    rng = np.random.RandomState(seed)
    return [synthetic_graph(rng, f"g{seed}_{i}", **kw) for i in range(count)]


def layout_graph(rng: np.random.RandomState, name: str, configs: int = 6) -> TensorGraph:
    """A chain whose nodes 1 and 3 take a layout each; runtime grows with the layouts' distance from 2."""
    base = synthetic_graph(rng, name, configs=configs)
    layouts = rng.randint(0, 5, (configs, 2, 1)).astype(np.float32)
    runtime = 100.0 + ((layouts[:, :, 0] - 2) ** 2).sum(1)
    return replace(base, task="layout", config_feat=layouts, config_nodes=np.array([1, 3]), runtime=runtime)


@pytest.fixture(scope="module")
def tile_data() -> tuple[list[TensorGraph], list[TensorGraph], list[TensorGraph]]:
    return family(1, 60), family(2, 15), family(3, 30)


@pytest.fixture(scope="module", params=["early", "late"])
def fitted(request, tile_data) -> CostModel:
    train, val, _ = tile_data
    return CostModel(join=request.param, seed=0, **QUICK).fit(train, val)


def _mean_tau(model: CostModel, graphs: list[TensorGraph]) -> float:
    return float(np.mean([kendall_tau(model.predict(g), g.runtime) for g in graphs]))


def test_both_joins_learn_the_graph_dependent_optimum_on_held_out_graphs(fitted, tile_data):
    test = tile_data[2]
    rng = np.random.RandomState(0)
    random = np.mean([kendall_tau(rng.normal(size=len(g.runtime)), g.runtime) for g in test])
    tau = _mean_tau(fitted, test)
    assert tau >= 0.7, tau
    assert tau > random + 0.5
    assert 1 <= fitted.best_epoch_ <= len(fitted.history_) <= QUICK["epochs"]


def test_save_and_load_round_trip_gives_identical_predictions(fitted, tile_data, tmp_path):
    path = tmp_path / "model.pt"
    fitted.save(path)
    loaded = CostModel.load(path)
    assert loaded.get_params() == fitted.get_params()
    assert loaded.best_epoch_ == fitted.best_epoch_ and loaded.history_ == fitted.history_
    for g in tile_data[2][:5]:
        assert np.array_equal(loaded.predict(g), fitted.predict(g))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="checkpoint"):
        CostModel.load(tmp_path / "junk.pt")


def test_an_opcode_never_seen_in_training_maps_to_the_reserved_index(fitted, tile_data):
    g = tile_data[2][0]
    unseen = replace(g, opcodes=np.array(["custom-call"] * len(g.opcodes)))
    scores = fitted.predict(unseen)
    assert scores.shape == (len(g.runtime),) and np.isfinite(scores).all()


def test_repeated_configurations_tie_exactly(fitted, tile_data):
    g = tile_data[2][0]
    twice = replace(g, config_feat=np.concatenate([g.config_feat, g.config_feat]), runtime=np.concatenate([g.runtime, g.runtime]))
    scores = fitted.predict(twice)
    assert np.array_equal(scores[: len(g.runtime)], scores[len(g.runtime):])


def test_a_seed_reproduces_a_fit_and_another_seed_changes_it(tile_data):
    train, val, test = tile_data
    quick = {**QUICK, "join": "late", "epochs": 3}
    a, b = (CostModel(seed=5, **quick).fit(train[:20], val) for _ in range(2))
    c = CostModel(seed=6, **quick).fit(train[:20], val)
    assert a.history_ == b.history_
    assert np.array_equal(a.predict(test[0]), b.predict(test[0]))
    assert not np.array_equal(a.predict(test[0]), c.predict(test[0]))


def test_error_runs_enter_neither_the_loss_nor_the_statistics():
    with_errors = family(4, 20, errors=2)
    without = [replace(g, config_feat=g.config_feat[g.valid], runtime=g.runtime[g.valid]) for g in with_errors]
    quick = {**QUICK, "join": "late", "epochs": 3}
    a = CostModel(seed=0, **quick).fit(with_errors)
    b = CostModel(seed=0, **quick).fit(without)
    assert a.history_ == b.history_
    for g, h in zip(with_errors[:5], without):
        scores = a.predict(g)
        assert scores.shape == (len(g.runtime),)
        np.testing.assert_allclose(scores[g.valid], b.predict(h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", [lambda s, t: pairwise_loss(s, t, "hinge"), lambda s, t: pairwise_loss(s, t, "logistic", weighted=True),
                                  listmle_loss], ids=["hinge", "weighted logistic", "listmle"])
def test_ranking_losses_ignore_error_runs_and_reward_the_right_order(loss):
    runtimes = torch.tensor([1.0, float("nan"), 2.0, 4.0, float("nan")])
    scores = torch.tensor([0.0, -5.0, 1.0, 2.0, 9.0], requires_grad=True)
    value = loss(scores, runtimes)
    value.backward()
    keep = torch.isfinite(runtimes)
    assert torch.isclose(value, loss(scores.detach()[keep], runtimes[keep]))
    assert scores.grad is not None and (scores.grad[~keep] == 0).all()
    assert loss(torch.tensor([0.0, 1.0, 2.0]), runtimes[keep]) < loss(torch.tensor([2.0, 1.0, 0.0]), runtimes[keep])


def test_hinge_loss_is_the_mean_over_ordered_pairs():
    value = pairwise_loss(torch.tensor([0.0, 0.5, 3.0]), torch.tensor([1.0, 2.0, 3.0]))
    assert value.item() == pytest.approx((0.5 + 0.0 + 0.0) / 3)


def test_the_absolute_head_learns_log_runtime():
    train, val, test = (family(seed, count, task="absolute") for seed, count in ((1, 60), (2, 15), (3, 30)))
    model = CostModel(join="late", seed=0, **QUICK).fit(train, val)
    constant = np.exp(np.median(np.log(np.concatenate([g.runtime for g in train]))))
    mape = np.mean([np.mean(np.abs(model.predict(g) - g.runtime) / g.runtime) for g in test])
    constant_mape = np.mean([np.mean(np.abs(constant - g.runtime) / g.runtime) for g in test])
    assert mape < 0.5 * constant_mape, (mape, constant_mape)
    assert all(np.isfinite(metric) for _, _, metric in model.history_)  # validation MAPE


def test_an_ensemble_predicts_the_mean_of_its_members_and_keeps_them_in_its_checkpoint(tmp_path):
    """members=3: three networks of different initial weights, each trained on its own loss; the prediction is the
    mean of their standardised log runtimes. A lone network keeps the checkpoint layout older files have."""
    train, val, test = (family(seed, count, task="absolute") for seed, count in ((1, 40), (2, 10), (3, 5)))
    model = CostModel(join="late", seed=0, **{**QUICK, "epochs": 8, "members": 3}).fit(train, val)
    encoded = model.featurizer_.encode(test[0])
    batch = make_batch([encoded], [np.arange(len(test[0].runtime))], "late", torch.device("cpu"))
    with torch.no_grad():
        members = np.array([net(batch).numpy() for net in model.net_.nets], dtype=np.float64)
    assert len(members) == 3 and not np.allclose(members[0], members[1])  # different initial weights, different nets
    mean, std = model.target_
    np.testing.assert_allclose(model.predict(test[0]), np.exp(members.mean(0) * std + mean), rtol=1e-5)
    model.save(tmp_path / "m.pt")
    loaded = CostModel.load(tmp_path / "m.pt")
    assert loaded.members == 3 and np.array_equal(loaded.predict(test[1]), model.predict(test[1]))
    lone = CostModel(join="late", seed=0, **{**QUICK, "epochs": 1}).fit(train[:8])
    assert not any(key.startswith("nets.") for key in lone.net_.state_dict())
    assert CostModel().members == 3  # the default


def test_a_checkpoint_from_before_ensembles_loads_as_the_one_network_it_holds(tmp_path):
    model = CostModel(join="late", seed=0, **{**QUICK, "epochs": 1}).fit(family(1, 8, task="absolute"))
    model.save(tmp_path / "m.pt")
    state = torch.load(tmp_path / "m.pt", weights_only=True)
    del state["params"]["members"]  # as every file written before the parameter existed
    torch.save(state, tmp_path / "old.pt")
    old = CostModel.load(tmp_path / "old.pt")
    graph = family(3, 1, task="absolute")[0]
    assert old.members == 1 and np.array_equal(old.predict(graph), model.predict(graph))


def _with_flops(graphs: list[TensorGraph], rng: np.random.RandomState) -> list[TensorGraph]:
    """The same graph every time; the runtime is the static flop count (one of XLA's totals) alone."""
    flops = 2.0 ** rng.uniform(10, 30, len(graphs))
    return [replace(graphs[0], name=g.name, program=g.program, config_feat=graphs[0].config_feat[:1], runtime=np.array([f / 100]),
                    extra={"graph_flops": f}) for g, f in zip(graphs, flops)]


@pytest.mark.parametrize("readout", ["pool", "additive"])
def test_a_graph_s_static_totals_reach_the_readout(readout):
    """Identical graphs whose runtime is their flop count: only the totals tell them apart, and both readouts
    learn them; a graph without the total reads as the training mean, and a checkpoint keeps the totals."""
    rng = np.random.RandomState(4)
    train, test = (_with_flops(family(seed, count, task="absolute"), rng) for seed, count in ((1, 60), (3, 20)))
    model = CostModel(seed=0, readout=readout, **{**QUICK, "epochs": 60}).fit(train)
    assert model.featurizer_.total_keys == ("graph_flops",)
    mape = np.mean([abs(model.predict(g)[0] - g.runtime[0]) / g.runtime[0] for g in test])
    constant = np.exp(np.median(np.log([g.runtime[0] for g in train])))
    blind_mape = np.mean([abs(constant - g.runtime[0]) / g.runtime[0] for g in test])
    assert mape < 0.02 * blind_mape, (mape, blind_mape)  # runtimes span 2**20: blind to the totals, off by orders of magnitude
    blind = replace(test[0], extra={})
    assert np.isfinite(model.predict(blind)).all()
    path = Path(tempfile.mkdtemp()) / "m.pt"
    model.save(path)
    np.testing.assert_allclose(CostModel.load(path).predict(test[1]), model.predict(test[1]), rtol=1e-6)


def test_the_additive_readout_needs_the_configuration_on_every_node():
    with pytest.raises(UserError, match="readout='additive'"):
        CostModel(join="late", readout="additive").fit(family(1, 2, task="absolute"))


def test_threads_are_sized_to_the_work_and_the_cpus_and_put_back(tile_data):
    cpus = len(os.sched_getaffinity(0))
    assert sized_threads(NODES_PER_THREAD - 1) == 1 and sized_threads(10**9) == cpus
    assert sized_threads(2 * NODES_PER_THREAD) == min(2, cpus)
    before = torch.get_num_threads()
    model = CostModel(join="late", **{**QUICK, "epochs": 1}).fit(tile_data[0][:4])
    assert model.threads_ == 1 and torch.get_num_threads() == before  # a few hundred nodes a step: one thread
    assert CostModel(join="late", threads=2, **{**QUICK, "epochs": 1}).fit(tile_data[0][:4]).threads_ == 2


def test_on_epoch_reports_each_epoch_and_no_validation_reports_nan(tile_data):
    seen = []
    model = CostModel(join="late", seed=0, **{**QUICK, "epochs": 2}).fit(tile_data[0][:10], on_epoch=lambda *row: seen.append(row))
    assert [row[0] for row in seen] == [1, 2] and all(np.isnan(row[2]) for row in seen)
    assert seen == model.history_


def test_layout_graphs_join_early_to_their_configurable_nodes():
    rng = np.random.RandomState(7)
    graphs = [layout_graph(rng, f"l{i}") for i in range(8)]
    model = CostModel(seed=0, **{**QUICK, "epochs": 2}).fit(graphs[:6], graphs[6:])
    assert model.predict(graphs[7]).shape == (6,)
    with pytest.raises(UserError, match="join='late'"):
        CostModel(join="late").fit(graphs)


@pytest.mark.parametrize("field, value", [
    ("hidden", 0), ("layers", 2.5), ("layers", True), ("join", "middle"), ("aggr", "lstm"), ("pooling", ()),
    ("pooling", ["sum", "sum"]), ("pooling", "sum"), ("pooling", ["median"]), ("loss", "mae"), ("lr", 0.0), ("lr", float("nan")),
    ("weight_decay", -1.0), ("configs_per_graph", 1), ("epochs", 0), ("patience", 0), ("seed", -1), ("seed", 2**40),
    ("pair_weight", "yes"), ("device", "tpu"), ("threads", 0), ("threads", 1.5), ("readout", "mean"), ("members", 0),
    ("members", 2.0),
])
def test_bad_hyper_parameters_are_refused_naming_the_field(field, value, tile_data):
    with pytest.raises(UserError, match=f"^{field}="):
        CostModel(**{field: value}).fit(tile_data[0][:2])


def test_bad_inputs_are_refused(tile_data):
    train = tile_data[0][:3]
    absolute = family(1, 2, task="absolute")
    with pytest.raises(UserError, match="^graphs"):
        CostModel().fit([])
    with pytest.raises(UserError, match="tasks"):
        CostModel().fit(train + absolute)
    with pytest.raises(UserError, match="loss='mse'"):
        CostModel(loss="mse").fit(train)
    with pytest.raises(UserError, match="loss='listmle'"):
        CostModel(loss="listmle").fit(absolute)
    with pytest.raises(UserError, match="pair_weight"):
        CostModel(loss="listmle", pair_weight=True).fit(train)
    with pytest.raises(UserError, match="valid run"):
        CostModel().fit([replace(g, runtime=np.full(len(g.runtime), np.nan)) for g in train])
    with pytest.raises(UserError, match="not fitted"):
        CostModel().predict(train[0])
    model = CostModel(join="late", **{**QUICK, "epochs": 1}).fit(train)
    with pytest.raises(UserError, match="node and"):
        model.predict(replace(train[0], node_feat=train[0].node_feat[:, :2], feat_names=()))
    with pytest.raises(UserError, match="absolute graph"):
        model.predict(absolute[0])
    with pytest.raises(UserError, match="val_graphs"):
        CostModel().fit(train, val_graphs=absolute)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_is_refused_where_there_is_none(tile_data):
    with pytest.raises(UserError, match="^device='cuda'"):
        CostModel(device="cuda").fit(tile_data[0][:2])
