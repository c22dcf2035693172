"""SimulatorRunner: a learnt (or default) table file measures a block in a study, globals as factors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.surrogates.difftune.decode import Block, decode_blocks
from engine.surrogates.difftune.params import OpParams, ParamTable
from engine.surrogates.difftune.simulate import simulate

HEX = "4801c34801c34801c34801c3"  # four dependent adds


def _table(tmp_path: Path, suffix: str) -> tuple[Path, ParamTable, Block]:
    block = decode_blocks([HEX])[0]
    assert isinstance(block, Block)
    table = ParamTable(4, 100, units=(("P0", 1), ("P1", 1)), groups=(),
                       rows={i.key: OpParams(1, 3, port_cycles=(("P0", 1),)) for i in block.instructions})
    path = tmp_path / f"learned{suffix}"
    table.save(path)
    return path, table, block


@pytest.mark.parametrize("suffix", [".json", ".txt"])
def test_measures_cycles_per_iteration_under_the_table(tmp_path: Path, suffix: str) -> None:
    path, table, block = _table(tmp_path, suffix)
    runner = runner_from_spec({"kind": "simulator", "hex": HEX, "table": str(path), "repeats": 2})
    results = runner.measure({})
    expected = simulate([block], table)[0] / 100
    assert [r.value for r in results] == [expected, expected] and expected > 11  # a 12-cycle chain per iteration
    narrow = runner.measure({"dispatch": 1})[0]
    assert narrow.ok and narrow.metadata["dispatch_width"] == 1


def test_bad_specs_and_factors_are_clear(tmp_path: Path) -> None:
    path, _, _ = _table(tmp_path, ".json")
    with pytest.raises(UserError, match="needs 'table'"):
        runner_from_spec({"kind": "simulator", "hex": HEX})
    with pytest.raises(UserError, match="no such file"):
        runner_from_spec({"kind": "simulator", "hex": HEX, "table": str(tmp_path / "none.json")})
    with pytest.raises(UserError, match="has no row for"):
        runner_from_spec({"kind": "simulator", "hex": "480fafc0", "table": str(path)})
    with pytest.raises(UserError, match="not an even-length hex string"):
        runner_from_spec({"kind": "simulator", "hex": "xyz", "table": str(path)})
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(UserError, match=r"table broken\.json: not JSON \(Expecting property name"):
        runner_from_spec({"kind": "simulator", "hex": HEX, "table": str(tmp_path / "broken.json")})
    runner = runner_from_spec({"kind": "simulator", "hex": HEX, "table": str(path)})
    failed = runner.measure({"mcpu": "haswell"})[0]
    assert failed.status == "invalid" and "not a simulator option" in failed.error
    assert runner.measure({"rob_size": 0})[0].status == "invalid"
    beyond = runner.measure({"dispatch": 65})[0]  # past the table's bounds: a configuration, not a failure
    assert beyond.status == "invalid" and "1..64" in beyond.error


def test_a_table_from_before_operand_variants_measures_a_slow_lea(tmp_path: Path) -> None:
    """A table written before slow LEAs had a row of their own (``LEA64r@slow``) has the plain opcode's row, which
    the simulator reads for them: the runner takes the table as the simulator does."""
    hex_text = "488d44c808"  # lea 0x8(%rax,%rcx,8),%rax: base, index, scale 8
    block = decode_blocks([hex_text])[0]
    assert isinstance(block, Block) and block.instructions[0].key.endswith("@slow")
    old = ParamTable(4, 100, units=(("P0", 1),), groups=(),
                     rows={block.instructions[0].base_key: OpParams(1, 2, port_cycles=(("P0", 1),))})
    path = tmp_path / "old.json"
    old.save(path)
    result = runner_from_spec({"kind": "simulator", "hex": hex_text, "table": str(path)}).measure({})[0]
    assert result.ok and result.value == simulate([block], old)[0] / 100
