"""ParamTable: validation, JSON/Parquet/key-value round trips, diff; default tables from llvm-mca-19."""

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.errors import UserError
from engine.surrogates.difftune import params
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


@pytest.mark.parametrize("suffix", [".json", ".parquet", ".txt"])
def test_round_trip_keeps_register_files_and_eliminated_moves(tmp_path: Path, suffix: str) -> None:
    table = replace(_table(), eliminated_moves=("ADD64rr",), register_files=(("gpr", 192), ("vec", 160)), memory_forwarding=1,
                    buffers=(("P01S", 60, ("P0", "P1")), ("P23S", 40, ("P23",))), queues=(("load", 72), ("store", 64)))
    table.save(tmp_path / f"t{suffix}")
    assert load(tmp_path / f"t{suffix}") == table
    assert load(tmp_path / f"t{suffix}").register_files == (("gpr", 192), ("vec", 160))
    older = {k: v for k, v in table.to_document().items() if k != "memory_forwarding"}  # a file from before the field
    assert params.from_document(older).memory_forwarding == 0
    with pytest.raises(UserError, match=r"^parameter table: memory_forwarding: must be from 0 to 1, got 2$"):
        params.from_document({**table.to_document(), "memory_forwarding": 2})


@pytest.mark.parametrize(("files", "message"), [((("fpu", 10),), "register_files: expected a kind"),
                                                ((("gpr", 0),), r"register_files\['gpr'\]: must be from 1"),
                                                ((("gpr", 8), ("gpr", 9)), "a kind appears twice")])
def test_bad_register_files_are_refused(files: tuple, message: str) -> None:
    with pytest.raises(UserError, match=message):
        replace(_table(), register_files=files)


@pytest.mark.parametrize(("fields", "message"), [
    ({"buffers": (("S", 10, ("P9",)),)}, "buffers: 'S' has members"),
    ({"buffers": (("S", 0, ("P0",)),)}, r"buffers\['S'\]: must be from 1"),
    ({"queues": (("fill", 8),)}, "queues: expected a kind"),
    ({"queues": (("load", 8), ("load", 9))}, "a kind appears twice")])
def test_bad_buffers_and_queues_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        replace(_table(), **fields)


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
    ("DispatchWidth four\n", "line 1: 'DispatchWidth': dispatch_width: expected an integer, got 'four'"),
    ("DispatchWidth 4 4\n", "line 1 is not 'key integer'"),
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


# -- absurd values (issue 29): refused in one line naming the file, the row or line and the field ----------

_TXT = {"dispatch_width": "DispatchWidth", "rob_size": "ReorderBufferSize", "uops": "NumMicroOps",
        "latency": "WriteLatency", "ra3": "ReadAdvance.3", "P01": "PortMap.P01"}


def _written(tmp_path: Path, suffix: str, key: str, field: str, value: object) -> Path:
    """``_table()`` saved as ``suffix`` with one value replaced: a global (``key`` '*'), a row's field, a ReadAdvance
    slot (``ra3``), a port's cycles (``P01``) or a unit's count (``key`` 'units')."""
    table, path = _table(), tmp_path / f"bad{suffix}"
    if suffix == ".parquet":
        frame = table.to_frame().astype({c: object for c in table.to_frame().columns if c != "key"})
        header = table.header()
        if key == "*":
            header[field] = value
        elif key == "units":
            header["units"][0][1] = value
        else:
            frame.loc[frame["key"] == key, field] = value
        frame = frame.astype({c: float for c in frame.columns[1:] if any(isinstance(v, float) for v in frame[c])})
        frame.attrs["difftune"] = json.dumps(header)
        frame.to_parquet(path, index=False)
        return path
    if suffix == ".txt":
        lines = table.to_key_values().splitlines()
        if key == "units":
            header = table.header()
            header["units"][0][1] = value
            lines[0] = "# tunelab parameter table: " + json.dumps(header)
        else:
            name = _TXT[field] if key == "*" else f"{key}.{_TXT[field]}"
            lines = [f"{name} {value}" if line.split()[0] == name else line for line in lines]
        path.write_text("\n".join(lines) + "\n")
        return path
    doc = table.to_document()
    if key == "*":
        doc[field] = value
    elif key == "units":
        doc["units"][0][1] = value
    elif field == "ra3":
        doc["rows"][key]["read_advance"][3] = value
    elif field == "P01":
        doc["rows"][key]["port_cycles"]["P01"] = value
    else:
        doc["rows"][key][field] = value
    path.write_text(json.dumps(doc))
    return path


ABSURD: list[tuple[str, str, object]] = [
    ("ADD64rm", "latency", 2**62), ("ADD64rm", "latency", -1), ("ADD64rm", "uops", 10**6), ("ADD64rm", "uops", -3),
    ("ADD64rm", "ra3", 10**9), ("ADD64rm", "P01", 10**7), ("*", "dispatch_width", 10**6), ("*", "rob_size", 2**40),
    ("units", "count", 0), ("units", "count", 2**40),
]
NOT_INTEGERS: list[tuple[str, str, object]] = [("ADD64rm", "latency", 2.5), ("ADD64rm", "uops", float("nan")), ("ADD64rm", "P01", float("inf")),
                ("ADD64rm", "latency", "5"), ("ADD64rm", "latency", True), ("*", "dispatch_width", 4.5)]


@pytest.mark.parametrize("suffix", [".json", ".parquet", ".txt"])
@pytest.mark.parametrize(("key", "field", "value"), ABSURD + NOT_INTEGERS)
def test_absurd_values_are_refused_naming_the_file_the_row_and_the_field(tmp_path: Path, suffix: str, key: str,
                                                                          field: str, value: object) -> None:
    if suffix == ".txt" and (key == "*" and field not in ("dispatch_width", "rob_size")):
        pytest.skip("not a key of the key-value format")
    if suffix == ".parquet" and isinstance(value, (str, bool)) and key != "*":
        pytest.skip("a Parquet column holds one type")
    if suffix == ".txt" and isinstance(value, str):
        pytest.skip("a key-value file holds text: '5' is a number there")
    path = _written(tmp_path, suffix, key, field, value)
    with pytest.raises(UserError) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message and path.name in message, message
    named = {"ra3": "read_advance[3]", "count": "P0"}.get(field, field)
    assert (key in message or key == "*") and named in message, message


def test_a_unit_without_sub_units_is_refused_before_it_hangs_the_simulator() -> None:
    with pytest.raises(UserError, match=r"units\['P0'\]"):
        ParamTable(4, 192, units=(("P0", 0),), groups=(), rows={"X": OpParams(1, 1, port_cycles=(("P0", 1),))})


def test_more_resources_than_the_simulators_masks_hold_are_refused() -> None:
    units = tuple((f"U{i}", 1) for i in range(params.MAX_RESOURCES + 1))
    with pytest.raises(UserError, match="resources"):
        ParamTable(4, 192, units=units, groups=())
    ParamTable(4, 192, units=units[:params.MAX_RESOURCES], groups=())


def test_a_parquet_table_without_its_header_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    _table().to_frame().to_parquet(path, index=False)
    with pytest.raises(UserError, match=r"plain\.parquet: .*header") as info:
        load(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ("# tunelab parameter table: {not json\n", "line 1"),
    ("# tunelab parameter table: [1, 2]\n", "line 1"),
    ('# tunelab parameter table: {"units": [], "groups": []}\nDispatchWidth 4\nReorderBufferSize 9\nA.NumMicroOps 1\n'
     "A.NumMicroOps 2\n", "line 5"),
    ("DispatchWidth 1_0\n", "line 1"),
])
def test_malformed_key_value_files_are_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        from_key_values(text)
    assert "\n" not in str(info.value)


def _parquet(tmp_path: Path, columns: dict, attrs: bytes | None = None) -> Path:
    """A Parquet file of ``columns`` with pandas' ``attrs`` metadata (``_table()``'s header unless given)."""
    header = json.dumps({"difftune": json.dumps(_table().header())}).encode()
    table = pa.table(columns).replace_schema_metadata({b"PANDAS_ATTRS": header if attrs is None else attrs})
    pq.write_table(table, tmp_path / "odd.parquet")
    return tmp_path / "odd.parquet"


ROW: dict[str, list[Any]] = {"key": ["ADD64rr"], "uops": [1], "latency": [1], **{f"ra{i}": [0] for i in range(7)},
       **{r: [0] for r in _table().resources}}


@pytest.mark.parametrize(("columns", "attrs", "message"), [
    ({k: v for k, v in ROW.items() if k != "key"}, None, "column 1: expected 'key', got 'uops'"),
    ({k: v for k, v in ROW.items() if k != "P01"}, None, "column 14: expected 'P01', got no more columns"),
    ({**ROW, "key": [["ADD64rr"]]}, None, "column 'key': list"),
    ({**ROW, "uops": ["1"]}, None, "column 'uops': string is not a number"),
    ({**ROW, "uops": pa.array([None], pa.int64())}, None, r"row 'ADD64rr': uops: expected an integer, got None"),
    ({c: v * 2 for c, v in ROW.items()}, None, "row 2: key 'ADD64rr' is repeated"),
    (ROW, b"\xff{", "the metadata: not JSON"),
    (ROW, b"[" * 100_000, "nested too deep"),
    (ROW, b'{"difftune": "[1]"}', "the header: expected a JSON object"),
])
def test_odd_parquet_tables_are_one_line_naming_the_file(tmp_path: Path, columns: dict, attrs: bytes | None,
                                                          message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        load(_parquet(tmp_path, columns, attrs))
    assert "\n" not in str(info.value) and "odd.parquet" in str(info.value)
