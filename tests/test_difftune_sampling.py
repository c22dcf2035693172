"""DiffTune's §3 sampling: the seed alone reproduces a table, draws stay in their ranges, only the block's opcodes."""

from __future__ import annotations

from engine.surrogates.difftune import sampling
from engine.surrogates.difftune.params import OpParams, ParamTable

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
