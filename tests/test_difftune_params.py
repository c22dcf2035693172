"""ParamTable: validation, JSON/Parquet/key-value round trips, diff; default tables from llvm-mca-19."""

from pathlib import Path

import pytest

from engine.errors import UserError
from engine.surrogates.difftune.decode import decode_block
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.params import OpParams, ParamTable, diff, from_key_values, load


def _table() -> ParamTable:
    return ParamTable(4, 192, units=(("P0", 1), ("P1", 1), ("P23", 2)), groups=(("P01", ("P0", "P1")),),
                      rows={"ADD64rr": OpParams(1, 1, port_cycles=(("P01", 1),)),
                            "ADD64rm": OpParams(2, 6, (5, 0, 0, 0, 0, 0, 0), (("P01", 1), ("P23", 1)))},
                      provenance={"mcpu": "test"})


@pytest.mark.parametrize("suffix", [".json", ".parquet", ".txt"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    table = _table()
    table.save(tmp_path / f"t{suffix}")
    assert load(tmp_path / f"t{suffix}") == table


def test_key_value_file_has_every_key_difftune_looks_up() -> None:
    table = _table()
    lines = table.to_key_values().splitlines()
    values = dict(line.split() for line in lines if not line.startswith("#"))
    assert values["DispatchWidth"] == str(table.dispatch_width) and values["ReorderBufferSize"] == str(table.rob_size)
    per_row = 2 + 7 + len(table.resources)
    assert len(values) == 2 + per_row * len(table.rows)
    assert values["ADD64rm.NumMicroOps"] == "2" and values["ADD64rm.ReadAdvance.1"] == "0"
    assert all(f"ADD64rm.PortMap.{r}" in values for r in table.resources)


@pytest.mark.parametrize(("text", "message"), [
    ("DispatchWidth 4\n", "no '# tunelab parameter table:' line"),
    ("DispatchWidth four\n", "line 1 is not 'key integer'"),
    ("Foo.Bar 1\n", "line 1 has an unknown key"),
])
def test_bad_key_value_files_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        from_key_values(text)


def test_diff_lists_changed_fields() -> None:
    a = _table()
    b = a.with_rows({**a.rows, "ADD64rm": OpParams(2, 7, (4, 0, 0, 0, 0, 0, 0), (("P01", 1), ("P23", 1)))})
    changed = diff(a, b)
    assert set(zip(changed["key"], changed["field"])) == {("ADD64rm", "latency"), ("ADD64rm", "ra0")}
    assert diff(a, a).empty


def test_bad_input_is_one_line() -> None:
    with pytest.raises(UserError, match="port_cycles"):
        ParamTable(4, 192, units=(("P0", 1),), groups=(), rows={"X": OpParams(1, 1, port_cycles=(("P9", 1),))})
    with pytest.raises(UserError, match="dispatch_width"):
        ParamTable(0, 192, units=(), groups=())


def test_haswell_defaults() -> None:
    block = decode_block("4801c3" "48031e" "c5fc5806" "4883d000")
    table = default_table([block], "haswell")
    assert (table.dispatch_width, table.rob_size, table.scheduler_size) == (4, 192, 60)
    assert table.rows["ADD64rr"] == OpParams(1, 1, (0,) * 7, (("HWPort0156", 1),))
    assert table.rows["ADD64rm"].read_advance[0] == 5 and dict(table.rows["ADD64rm"].port_cycles) == {
        "HWPort0156": 1, "HWPort23": 1}
    assert table.rows["VADDPSYrm"].read_advance[0] == 7
    assert dict(table.rows["ADC64ri8"].port_cycles) == {"HWPort06": 1, "HWPort0156": 1}
