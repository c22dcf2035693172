"""The learned tables committed per CPU (data/difftune/tables/) reproduce, with ``tunelab difftune evaluate
--held-out``, the figures data/difftune/README.md quotes for them, on blocks no learning run saw, and beat llvm-mca-19,
its default table and the simple table there."""

from __future__ import annotations

import json
import re

import pytest

from engine.io.paths import REPO_ROOT
from tests.conftest import cli

DATA = REPO_ROOT / "data" / "difftune"
#: A README row: | `cpu` | -mcpu | held-out blocks | MAPE | within 5% | tau | ...
ROW = re.compile(r"^\| `(?P<cpu>[\w-]+)` \| (?P<arch>\w+) \| (?P<blocks>[\d,]+) \| (?P<mape>[\d.]+)% \| "
                 r"(?P<within>[\d.]+)% \| (?P<tau>[\d.]+) \|", re.MULTILINE)


def quoted() -> dict[str, dict[str, str]]:
    return {m["cpu"]: m.groupdict() for m in ROW.finditer((DATA / "README.md").read_text())}


def test_every_committed_table_is_quoted_and_every_quote_has_its_table() -> None:
    tables = {p.stem for p in (DATA / "tables").glob("*.json")}
    assert tables and tables == set(quoted())
    assert tables <= {p.name.split(".")[0] for p in DATA.glob("*.csv.gz")}  # each from a committed truth


@pytest.mark.parametrize("cpu", sorted(quoted()))
def test_evaluate_held_out_reproduces_the_quoted_figures(cpu: str, db_path) -> None:
    pytest.importorskip("iced_x86")
    figures = quoted()[cpu]
    table = DATA / "tables" / f"{cpu}.json"
    out = cli("difftune", "evaluate", "--truth", "measured", "--measured", str(DATA / f"{cpu}.csv.gz"),
              "--arch", figures["arch"], "--table", str(table), "--held-out", "--json", db=db_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["held_out"] is True
    scores = {row["predictor"]: row for row in result["accuracy"]}
    learned = scores[f"tunelab ({table})"]
    assert learned["n"] == int(figures["blocks"].replace(",", ""))
    assert f"{learned['mape']:.2%}" == f"{figures['mape']}%" and f"{learned['kendall_tau']:.3f}" == figures["tau"]
    assert f"{learned['within_5pct']:.1%}" == f"{figures['within']}%"
    for name in ("llvm-mca-19", "tunelab (default table)", "tunelab (default table, memory forwarding)", "simple table"):
        assert learned["mape"] < scores[name]["mape"] and learned["kendall_tau"] > scores[name]["kendall_tau"]
