"""The cost-model data generator without timing anything: configurations, the protocol's arithmetic on a fake
clock, the ``.npz`` round trip through ``read_graph``, resumability with a fake backend. Only the last test
needs JAX (it compiles, never times)."""

from __future__ import annotations

import random
import sys
from dataclasses import replace

import numpy as np
import pytest

from engine.errors import UserError
from engine.io.paths import REPO_ROOT
from engine.surrogates.costmodel.features import tile_estimates
from engine.surrogates.costmodel.generate import jaxbackend, store
from engine.surrogates.costmodel.generate.jaxbackend import Compiled
from engine.surrogates.costmodel.generate.programs import (
    ABSOLUTE_COLUMNS,
    JOINT_COLUMNS,
    LARGE_COLUMNS,
    LARGE_SPLITS,
    MAX_ELEMENTS,
    MIN_BLOCK,
    PARAMETERS,
    SPLITS,
    TILE_COLUMNS,
    VARIANTS,
    TileProgram,
    absolute_programs,
    programs_for,
    tile_programs,
)
from engine.surrogates.costmodel.generate.protocol import (
    Protocol,
    Timings,
    calibrate,
    calls_per_batch,
    disagreeing,
    kept_runtime,
    measure_pass,
    pass_minima,
    pass_noise,
)
from engine.surrogates.costmodel.generate.run import generate, measure_wave
from engine.surrogates.costmodel.generate.store import Sample, sample_arrays, write_npz
from engine.surrogates.costmodel.hlo import hlo_graph
from engine.surrogates.costmodel.readers import read_folder, read_graph
from engine.surrogates.costmodel.tables import graph_table

HLO = """HloModule m

ENTRY %main (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4]{1,0} parameter(0)
  %c = f32[] constant(1)
  %b = f32[8,4]{1,0} broadcast(%c), dimensions={}
  ROOT %y = f32[8,4]{1,0} add(%x, %b)
}
"""


class FakeClock:
    """Nanoseconds that only move when a fake call runs."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def call(self, ns: int, log: list[int] | None = None, tag: int = 0):
        def run() -> None:
            self.now += ns
            if log is not None:
                log.append(tag)
        return run


# ---- configurations ----------------------------------------------------------------------------------------------

def test_tile_batch_sizes_are_powers_of_two_plus_two_ragged_chunks():
    program = TileProgram("row_mlp", 1024, 256, 1024)
    assert program.batch_sizes() == (2, 4, 8, 16, 32, 48, 64, 128, 256, 384, 512, 1024)
    configs = program.configurations()
    ragged = next(c for c in configs if c.batch == 384)
    assert ragged.features == {"batch_size": 384, "chunks": 3, "remainder": 256, "rows": 1024, "row_width": 256, "second": 1024}
    (graph_file,) = program.files()
    assert graph_file.stem == program.name and configs[graph_file.graph].batch == 1024  # the unchunked program is the graph
    assert set(TILE_COLUMNS) - set(ragged.features) == {"config_flops", "config_bytes"}


def test_tile_programs_are_distinct_timeable_and_shuffled_by_the_seed():
    programs = tile_programs(0)
    assert len(programs) >= 300 and len({p.name for p in programs}) == len(programs)
    assert all(p.timeable() for p in programs)
    assert programs == tile_programs(0) and programs != tile_programs(1)
    assert {p.family for p in programs} == {"softmax_matmul", "row_mlp", "layernorm_matmul", "attention", "conv"}
    assert programs_for("tile", 0, 5) == programs[:5]


def test_joint_programs_cross_power_of_two_chunks_with_splits_of_the_second_size():
    program = programs_for("joint", 0, 1)[0]
    configs = program.configurations()
    assert program.columns == JOINT_COLUMNS and program.columns[:2] == ("batch_size", "splits") and program.task == "tile"
    assert all(b & (b - 1) == 0 for b in program.batch_sizes())
    assert [(c.batch, c.splits) for c in configs] == [(b, p) for b in program.batch_sizes() for p in SPLITS]
    assert all(c.features["splits"] == c.splits and c.label == f"b{c.batch}_p{c.splits}" for c in configs)
    (graph_file,) = program.files()
    assert (configs[graph_file.graph].batch, configs[graph_file.graph].splits) == (program.rows, 1)
    joint = tile_programs(0, SPLITS)
    assert len(joint) >= 300 and all(p.timeable() and p.second % max(SPLITS) == 0 and p.name.endswith("_split") for p in joint)
    assert programs_for("joint", 0, 3) == joint[:3]


def test_large_programs_cross_chunks_splits_and_the_fusion_flag_in_over_200_configurations():
    program = programs_for("large", 0, 1)[0]
    configs = program.configurations()
    assert program.columns == LARGE_COLUMNS and program.name.endswith("_large") and program.task == "tile"
    assert len(configs) >= 200 and len({c.label for c in configs}) == len(configs)
    assert {c.splits for c in configs} == set(LARGE_SPLITS) and program.second // max(LARGE_SPLITS) >= MIN_BLOCK
    assert all(c.features["ynn_fusion"] == float(not c.options) and c.options in VARIANTS.values() for c in configs)
    assert {c.features["ynn_fusion"] for c in configs} == {0.0, 1.0}
    powers = [b for b in program.batch_sizes() if b & (b - 1) == 0]
    assert set(program.batch_sizes()) - set(powers) == {3 * b // 2 for b in powers[:-1]}  # 3·2^k between the powers
    (graph_file,) = program.files()
    default = configs[graph_file.graph]
    assert (default.batch, default.splits, default.options) == (program.rows, 1, {})
    large = tile_programs(0, LARGE_SPLITS, tuple(VARIANTS), MIN_BLOCK)
    assert len(large) >= 100 and programs_for("large", 0, 3) == large[:3]
    assert all(len(p.configurations()) >= 200 for p in large)


def test_the_joint_task_still_lists_the_committed_programs_first():
    """Adding the large task must not reorder the joint one: its committed files are its first 68 programs."""
    committed = {path.stem for path in (REPO_ROOT / "data" / "costmodel" / "joint").glob("*.npz")}
    assert committed and committed == {p.name for p in programs_for("joint", 0, len(committed))}


def test_program_counts_are_checked():
    with pytest.raises(UserError, match="distinct programs"):
        programs_for("tile", 0, 100_000)
    with pytest.raises(UserError, match="task 'layout'"):
        programs_for("layout", 0, 1)
    with pytest.raises(UserError, match="at least 1"):
        programs_for("absolute", 0, 0)


def test_absolute_programs_are_seeded_bounded_dags_with_two_compile_variants():
    programs = absolute_programs(7, 40)
    assert programs == absolute_programs(7, 40) and programs[:10] == absolute_programs(7, 10)
    ops = {node.op for p in programs for node in p.nodes}
    assert {"transpose", "reduce_major", "dot", "conv", "gather", "scatter", "concat", "mlp", "attention"} <= ops
    for program in programs:
        assert program.outputs()
        for i, node in enumerate(program.nodes):
            assert all(j < i for j in node.inputs)
            if node.op not in PARAMETERS:
                assert node.shape[0] * node.shape[1] <= MAX_ELEMENTS
    first = programs[0]
    assert [f.stem for f in first.files()] == [f"{first.name}_ynn", f"{first.name}_noynn"]
    assert [c.features for c in first.configurations()] == [{"ynn_fusion": 1.0}, {"ynn_fusion": 0.0}]
    assert first.configurations()[1].options == {"xla_cpu_experimental_ynn_fusion_type": ""}
    assert first.columns == ABSOLUTE_COLUMNS


# ---- protocol arithmetic -----------------------------------------------------------------------------------------

def test_calls_per_batch_reach_the_minimum_batch_length():
    assert calls_per_batch(1_000_000, 5_000_000) == 5
    assert calls_per_batch(1_200_000, 5_000_000) == 5
    assert calls_per_batch(9_000_000, 5_000_000) == 1
    assert calls_per_batch(0, 5_000_000) == 5_000_000


def test_calibration_on_a_fake_clock():
    clock = FakeClock()
    assert calibrate(clock.call(400_000), clock, Protocol()) == 13  # 5 ms ÷ 0.4 ms
    assert calibrate(clock.call(700_000_000), clock, Protocol()) == 0  # beyond max_call_s: not timed


def test_a_pass_interleaves_configurations_and_divides_by_the_calls():
    clock, order = FakeClock(), []
    calls = [clock.call(ns, order, i) for i, ns in enumerate((1000, 2000, 3000))]
    times = measure_pass(calls, [2, 1, 0], 4, clock, random.Random(0))
    assert times.shape == (3, 4)
    assert np.all(times[0] == 1000) and np.all(times[1] == 2000) and np.isnan(times[2]).all()
    assert order.count(0) == 8 and order.count(1) == 4 and 2 not in order
    # every configuration's repeat r happens before any repeat r + 1
    rounds = [order[i:i + 3] for i in range(0, 12, 3)]
    assert all(sorted(set(r)) == [0, 1] for r in rounds)


def test_pass_minima_noise_and_the_kept_runtime():
    repeats = np.full((4, 3, 4), np.nan)
    repeats[0, 0] = [110, 100, 130, 105]
    repeats[0, 1] = [104, 108, 120, 101]
    repeats[1, 0] = [200, 210, 220, 205]
    repeats[1, 1] = [250, 240, 260, 255]
    repeats[1, 2] = [198, 230, 222, 210]  # re-measured: agrees with pass 1, so 198 is confirmed
    repeats[3, 0] = [100, 100, 100, 100]
    repeats[3, 1] = [150, 150, 150, 150]
    repeats[3, 2] = [130, 130, 130, 130]  # re-measured: agrees with neither
    minima = pass_minima(repeats)
    assert minima[0, :2].tolist() == [100, 101] and np.isnan(minima[0, 2]) and np.isnan(minima[2]).all()
    assert disagreeing(minima[:, :2], 0.10).tolist() == [False, True, False, True]
    assert disagreeing(minima, 0.10).tolist() == [False, False, False, True]
    assert pass_noise(minima) == pytest.approx([np.log(101 / 100), np.log(240 / 200), np.log(150 / 100)])
    assert kept_runtime(minima).tolist() == [100, 198, -1, 100]


def test_disagreeing_passes_are_measured_again():
    clock = FakeClock()
    # calibration (1 warm-up, 1 timed, a batch of 5) and pass 1 (2 × 5 calls) at 1 µs; pass 2 30 % slow; the re-measurement not
    durations = iter([1000] * 17 + [1300] * 10)

    def call() -> None:
        clock.now += next(durations, 1000)

    comps = [Compiled("", 1.0, 1.0, call)]
    protocol = Protocol(repeats=2, min_batch_s=5e-6)
    (timing,) = measure_wave([comps], protocol, clock, random.Random(0))
    minima = timing.minima()
    assert timing.calls.tolist() == [5]
    assert np.isfinite(minima).all() and minima[0, 1] > minima[0, 0] * 1.1
    assert kept_runtime(minima).tolist() == [1000]


def test_protocol_refuses_nonsense():
    with pytest.raises(UserError, match="repeats and passes"):
        Protocol(repeats=0)
    with pytest.raises(UserError, match="must be > 0"):
        Protocol(tolerance=0)


# ---- files ---------------------------------------------------------------------------------------------------------

def _sample(runtimes: list[float], default: int = 1) -> Sample:
    protocol = Protocol(repeats=2, passes=2, retries=0)
    timing = Timings.empty(len(runtimes), protocol)
    timing.repeats_ns[:, 0] = np.array(runtimes)[:, None] * [1.0, 1.2]
    timing.repeats_ns[:, 1] = np.array(runtimes)[:, None] * [1.05, 1.1]
    timing.calls[:] = 3
    timing.load[:] = 2.5
    feat = np.array([[b, 8 / b] for b in (1, 2, 4)][: len(runtimes)], dtype=float)
    return Sample(hlo_graph(HLO), "prog", "tile", ("batch_size", "chunks"), feat, timing, default,
                  {"graph_flops": 32.0, "graph_bytes": 256.0}, {"jax_version": "0.10.2", "cpu_model": "Test CPU"})


def test_a_written_sample_reads_back_through_read_graph(tmp_path):
    path = tmp_path / "prog.npz"
    write_npz(path, sample_arrays(_sample([30e3, 60e3, 90e3]), Protocol(repeats=2, retries=0)))
    graph = read_graph(path)
    assert graph.name == "prog" and graph.program == "prog" and graph.task == "tile"
    assert graph.opcodes.tolist() == ["parameter", "constant", "broadcast", "add"]
    assert graph.edges.tolist() == [[2, 1], [3, 0], [3, 2]]
    assert graph.node_splits.tolist() == [0]
    assert graph.config_feat_names == ("batch_size", "chunks") and graph.config_feat[:, 0].tolist() == [1, 2, 4]
    assert graph.runtime.tolist() == [30e3, 60e3, 90e3] and graph.default == 1
    assert graph.extra["graph_flops"] == 32 and graph.extra["kernels"] == 2
    with np.load(path) as raw:
        assert raw["config_small"].tolist() == [1, 0, 0]  # under 50 µs: flagged, kept
        assert raw["config_repeats_ns"].shape == (3, 2, 2) and str(raw["cpu_model"]) == "Test CPU"
        assert raw["config_unstable"].tolist() == [0, 0, 0]
    absolute = tmp_path / "dag.npz"
    write_npz(absolute, sample_arrays(replace(_sample([30e3], default=0), task="absolute"), Protocol(repeats=2, retries=0)))
    assert read_graph(absolute).task == "absolute"


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store.np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        write_npz(tmp_path / "a.npz", {"x": np.zeros(2)})
    assert list(tmp_path.iterdir()) == []


def test_sample_shapes_are_checked():
    with pytest.raises(UserError, match="configuration rows"):
        sample_arrays(_sample([1e5, 2e5], default=5), Protocol(repeats=2, retries=0))


# ---- the loop, with a fake backend ----------------------------------------------------------------------------

class FakeBackend:
    """Compiles nothing: each configuration's call advances the fake clock by a U-shaped function of its chunk."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.compiled: list[str] = []

    def environment(self) -> dict[str, str]:
        return {"jax_version": "fake", "cpu_model": "Fake CPU"}

    def empty(self):
        return self.clock.call(10_000)

    def compile(self, program):
        self.compiled.append(program.name)
        return [Compiled(HLO, 100.0, 200.0, self.clock.call(int(1e6 * (1 + abs(np.log2(c.batch or 1) - 5)))))
                for c in program.configurations()]


def _run(tmp_path, clock, backend, programs=3, progress=None):
    return generate("tile", programs, tmp_path / "out", seed=3, backend=backend, clock=clock, progress=progress,
                    protocol=Protocol(repeats=2, min_batch_s=1e-3), wave=2)


def test_generate_writes_one_readable_file_per_program_and_resumes(tmp_path):
    clock = FakeClock()
    backend = FakeBackend(clock)
    steps = []
    done = _run(tmp_path, clock, backend, progress=steps.append)
    assert (done.written, done.skipped, done.files) == (3, 0, 3)
    assert [s.done for s in steps] == [1, 2, 3] and steps[-1].total == 3
    graphs = read_folder(tmp_path / "out")
    assert sorted(g.name for g in graphs) == sorted(p.name for p in programs_for("tile", 3, 3))
    for graph in graphs:
        batch = graph.config_feat[:, graph.config_feat_names.index("batch_size")]
        assert batch[int(np.nanargmin(graph.runtime))] == 32  # the fake optimum
        assert graph.config_feat[:, graph.config_feat_names.index("config_flops")].tolist() == [100.0] * len(batch)
        assert batch[graph.default] == graph.config_feat[0, graph.config_feat_names.index("rows")]
    assert done.samples == sum(len(g.runtime) for g in graphs)
    assert done.noise_quantiles() == {"median": 0.0, "p90": 0.0}

    again = _run(tmp_path, clock, backend)
    assert (again.written, again.skipped, len(backend.compiled)) == (0, 3, 3)
    (tmp_path / "out" / f"{graphs[0].name}.npz").unlink()
    third = _run(tmp_path, clock, backend)
    assert (third.written, third.skipped, backend.compiled[-1]) == (1, 2, graphs[0].name)


def test_a_joint_program_is_one_tile_file_whose_study_has_chunk_and_split_factors(tmp_path):
    clock = FakeClock()
    done = generate("joint", 1, tmp_path / "out", seed=0, backend=FakeBackend(clock), clock=clock, protocol=Protocol(repeats=2, min_batch_s=1e-3))
    (graph,) = read_folder(tmp_path / "out")
    assert graph.task == "tile" and graph.config_feat_names == JOINT_COLUMNS and done.samples == len(graph.runtime)
    spec, table = graph_table(graph, "joint")
    assert spec.space.names == ["batch_size", "splits"] and len(table) == len(graph.runtime)
    column = {name: graph.config_feat[:, i] for i, name in enumerate(graph.config_feat_names)}
    trips, working_set = tile_estimates(graph)
    assert trips.tolist() == column["chunks"].tolist()  # a split blocks the intermediate, not the rows
    assert np.allclose(working_set, 4 * column["batch_size"] * (column["row_width"] + column["second"] / column["splits"]))


def test_shards_fill_one_folder_without_timing_a_program_twice(tmp_path):
    clock = FakeClock()
    backend = FakeBackend(clock)
    runs = [generate("tile", 5, tmp_path / "out", seed=3, backend=backend, clock=clock, shard=(i, 2),
                     protocol=Protocol(repeats=2, min_batch_s=1e-3)) for i in (1, 0)]
    assert [r.written for r in runs] == [2, 3] and sorted(backend.compiled) == sorted(p.name for p in programs_for("tile", 3, 5))
    with pytest.raises(UserError, match="shard: 2/2"):
        generate("tile", 5, tmp_path / "out", backend=backend, shard=(2, 2))


def test_generate_refuses_a_file_as_the_folder(tmp_path):
    (tmp_path / "out").write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        _run(tmp_path, FakeClock(), FakeBackend(FakeClock()))


def test_missing_jax_is_one_line_with_the_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.setattr(jaxbackend, "pin", lambda cpu: 0)  # never pin the test process
    with pytest.raises(UserError, match=r"pip install -e \.\[costmodel-data\]"):
        generate("tile", 1, tmp_path / "out")


@pytest.mark.slow
def test_jax_programs_compile_to_graphs_the_parser_reads(monkeypatch):
    """Compiles (never times) a small tile program, a small large-task one (YNN fusions off for half of its
    configurations) and a random DAG with the real JAX backend."""
    pytest.importorskip("jax")
    monkeypatch.setattr(jaxbackend, "pin", lambda cpu: 0)
    backend = jaxbackend.JaxBackend()
    assert backend.environment()["jax_version"]
    tile = TileProgram("attention", 8, 16, 8)
    graphs = {}
    large = TileProgram("row_mlp", 8, 16, 16, (1, 2), tuple(VARIANTS))
    for program in [tile, large, *absolute_programs(0, 1)]:
        compiled = backend.compile(program)
        assert len(compiled) == len(program.configurations())
        for config, comp in zip(program.configurations(), compiled):
            graphs[program.name, config.label] = graph = hlo_graph(comp.hlo)
            assert len(graph.opcodes) > 2 and len(graph.edges) and comp.flops >= 0
    assert "while" in graphs[tile.name, "b2"].opcodes.tolist()  # chunks of 2 rows: a loop over 4 chunks


@pytest.mark.slow
def test_a_split_computes_the_unsplit_function():
    """Chunks × splits are tiles of one computation: every family's split rows, unrolled (joint task) or looped over
    the blocks (large task; flash-style for attention in both), match the plain expression."""
    jax = pytest.importorskip("jax")
    for family, second in [("softmax_matmul", 64), ("row_mlp", 64), ("layernorm_matmul", 64), ("attention", 128), ("conv", 8)]:
        for program in (TileProgram(family, 64, 32, second, SPLITS), TileProgram(family, 64, 32, second, SPLITS, tuple(VARIANTS))):
            arrays = jaxbackend.tile_inputs(program, np.random.default_rng(0))
            plain = np.asarray(jax.jit(jaxbackend.tile_function(jax, program, 64))(*arrays))
            for splits in SPLITS[1:]:
                split = np.asarray(jax.jit(jaxbackend.tile_function(jax, program, 16, splits))(*arrays))
                assert np.allclose(split, plain, rtol=1e-5, atol=1e-5 * np.abs(plain).max()), (family, splits, program.large)


def test_every_absolute_program_of_a_long_run_builds():
    """A gather or scatter on a value narrower than every index size (rows 7 after a transpose) once stopped a
    2,500-program run of seed 0 before it began; each of the first 3,000 programs builds now."""
    assert len({p.name for p in absolute_programs(0, 3000)}) == 3000
