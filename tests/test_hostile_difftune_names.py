"""Names of stored DiffTune and cost-model things (issue 29): a name that is a path, or that commands would read as
a file, is refused in one line naming it before any work, and nothing is stored or created. Real commands, a
real database file."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import Store
from storage.difftune import param_tables
from tests.conftest import cli, one_line_error

GRAPH = Path(__file__).resolve().parents[1] / "data" / "costmodel" / "tile"


@pytest.mark.parametrize("name", ["../evil", "a/b", "/tmp/evil", ".hidden", "table.json", "table.parquet", "table.txt"])
def test_a_table_is_never_built_under_a_path_or_a_file_name(db_path: Path, name: str) -> None:
    one_line_error(cli("difftune", "table", "build", "--arch", "haswell", "--name", name, db=db_path), "name", repr(name), status=2)
    with Store(db_path) as store:
        assert param_tables(store).empty


@pytest.mark.parametrize("command", [
    ["difftune", "dataset", "--arch", "haswell", "--samples", "10"],
    ["difftune", "train", "--dataset", "tiny"],
    ["difftune", "calibration", "recovery", "--surrogate", "s"],
    ["costmodel", "train", "--data", "cpu-tile"],
    ["costmodel", "study", str(GRAPH / "missing.npz")],
])
def test_every_other_name_that_becomes_a_folder_or_a_study_is_checked_first(db_path: Path, command: list[str]) -> None:
    """The other ``--name`` options refused such names already: kept so, and before any work."""
    if command[:2] == ["difftune", "train"]:
        pytest.importorskip("torch")
    one_line_error(cli(*command, "--name", "../evil", db=db_path), "'../evil'", status=2)
    assert not (db_path.parent.parent / "evil").exists()
    assert not any(p.name.endswith((".difftune", ".surrogates", ".costmodels")) for p in db_path.parent.iterdir())
