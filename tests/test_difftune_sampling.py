"""DiffTune's §3 sampling: the seed alone reproduces a table, draws stay in their ranges, only the block's opcodes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.surrogates.difftune import sampling
from engine.surrogates.difftune.params import OpParams, ParamTable
from engine.surrogates.difftune.surrogate import param_matrix

MODEL = ParamTable(dispatch_width=4, rob_size=192, units=(("P0", 1), ("P1", 1), ("P5", 1)),
                   groups=(("P01", ("P0", "P1")),), rows={"ADD64rr": OpParams(1, 1)}, scheduler_size=60)


def test_the_seed_alone_reproduces_the_table():
    keys = ["ADD64rr", "IMUL64rr", "MOV64rm"]
    assert sampling.sample_table(keys, MODEL, 7) == sampling.sample_table(reversed(keys), MODEL, 7)
    assert sampling.sample_table(keys, MODEL, 7) != sampling.sample_table(keys, MODEL, 8)


def test_draws_stay_in_the_ranges_and_keep_what_difftune_does_not_learn():
    for seed in range(200):
        table = sampling.sample_table(["A", "B"], MODEL, seed)
        assert set(table.rows) == {"A", "B"}
        assert 1 <= table.dispatch_width <= 10 and 50 <= table.rob_size <= 250
        assert (table.units, table.groups, table.scheduler_size) == (MODEL.units, MODEL.groups, 60)
        for row in table.rows.values():
            assert 1 <= row.uops <= 5 and 0 <= row.latency <= 5 and all(0 <= a <= 5 for a in row.read_advance)
            assert len(row.port_cycles) <= 2 and all(u in {"P0", "P1", "P5"} and 1 <= c <= 2 for u, c in row.port_cycles)
    draws = [sampling.sample_table(["A"], MODEL, seed).rows["A"] for seed in range(2000)]
    assert {r.latency for r in draws} == set(range(6)) and {len(r.port_cycles) for r in draws} == {0, 1, 2}


def test_a_row_drawn_in_one_call_is_the_stream_of_scalar_draws():
    """``draw`` relies on numpy's legacy ``randint(size=n)`` giving the same values as n scalar calls."""
    for seed in (0, 1, 7, 12345, 2**32 - 1):
        one, many = np.random.RandomState(seed), np.random.RandomState(seed)
        scalars = [int(one.randint(0, 6)) for _ in range(sampling.ROW_VALUES)] + [int(one.randint(3)), int(one.randint(27))]
        vector = [*many.randint(0, 6, size=sampling.ROW_VALUES).tolist(), int(many.randint(3)), int(many.randint(27))]
        assert scalars == vector


def test_sample_rows_are_the_tables_matrix_and_threads_draw_alike():
    keys = ["ADD64rr", "IMUL64rr", "MOV64rm", "SHL64ri"]
    resources = [*MODEL.resources]
    for seed in range(300):
        table = sampling.sample_table(keys, MODEL, seed)
        rows, globals_ = sampling.sample_rows(sorted(keys), MODEL, seed, resources)
        assert np.array_equal(rows, param_matrix(table, sorted(keys), resources))
        assert globals_.tolist() == [table.dispatch_width, table.rob_size]
    with ThreadPoolExecutor(4) as pool:  # each thread reseeds its own generator
        tables = list(pool.map(lambda s: sampling.sample_table(keys, MODEL, s % 50), range(400)))
    assert all(t == sampling.sample_table(keys, MODEL, s % 50) for s, t in enumerate(tables))


def test_the_draws_follow_the_documented_order_one_value_at_a_time():
    """A stored data set redraws its tables from seeds: the stream must stay the module doc's order (width, ROB,
    then per sorted key latency, µops, 7 ReadAdvance slots, the number of picks and each (unit, cycles)),
    checked against scalar draws written out here."""
    units = [u for u, _ in MODEL.units]
    keys = ["MOV64rm", "ADD64rr", "IMUL64rr"]
    for seed in range(100):
        rng = np.random.RandomState(seed)
        width, rob = rng.randint(1, 11), rng.randint(50, 251)
        rows = {}
        for key in sorted(keys):
            latency, uops = rng.randint(0, 6), rng.randint(0, 6)
            advance = tuple(int(rng.randint(0, 6)) for _ in range(7))
            picked: dict[str, int] = {}
            for _ in range(rng.randint(0, 3)):
                unit = units[rng.randint(len(units))]
                picked[unit] = int(rng.randint(0, 3))
            rows[key] = OpParams(max(int(uops), 1), int(latency), advance,
                                 tuple(sorted((u, c) for u, c in picked.items() if c)))
        table = sampling.sample_table(keys, MODEL, seed)
        assert (table.dispatch_width, table.rob_size, table.rows) == (width, rob, rows)
