"""Issue 31 §5: ``tunelab --help`` starts like a small tool. Building every sub-command's parser and its help
must not import the numerics, the dashboard or the database (each costs 0.1–2 s of CPU); a command imports
what it uses when it runs. A help whose epilog is a table of what the command runs (``tune --help``: the
strategies' options) is written from those modules, on demand."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: What the help path must never import (top-level package names).
HEAVY = ("pandas", "numpy", "scipy", "statsmodels", "torch", "streamlit", "duckdb", "numba", "plotly", "sklearn",
         "lightgbm", "formulaic", "yaml", "torch_geometric")

PROBE = f"""
import contextlib, io, sys
from app.cli import build_parser
parser = build_parser()
with contextlib.redirect_stdout(io.StringIO()):
    parser.format_help()
    for action in parser._subparsers._group_actions:
        for sub in action.choices.values():
            if getattr(sub, "epilog_from", None) is None:  # an options table (tune --help) imports what it lists
                sub.format_help()
print(",".join(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))))
"""


def test_the_help_of_every_command_imports_no_heavy_package():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"tunelab --help imported {done.stdout.strip()}"


def test_help_is_printed_and_exits_zero():
    done = subprocess.run([sys.executable, "-m", "app.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "analyze" in done.stdout and "export" in done.stdout


ANALYSIS_PROBE = """
import sys
import numpy as np, pandas as pd
from engine.analysis import analyze, anova
rng = np.random.default_rng(0)
data = pd.DataFrame({"a": rng.uniform(1, 2, 50), "b": rng.integers(1, 5, 50)})
data["y"] = np.exp(data["a"]) + data["b"] + rng.uniform(0, 0.1, 50)
result = analyze(data, "y ~ a + I(a^2) + b + a:b", transform="boxcox-round", anova_type=2)
anova(result.model, 3)
print(",".join(sorted({m.split(".")[0] for m in sys.modules} & {"statsmodels", "scipy", "formulaic"})))
"""


def test_an_analysis_imports_neither_statsmodels_nor_scipy_nor_formulaic():
    """Issue 31 §4: those imports alone cost more CPU than R's whole lm + Anova + ncvTest + powerTransform report."""
    done = subprocess.run([sys.executable, "-c", ANALYSIS_PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"an analysis imported {done.stdout.strip()}"


SEED = """
import sys
from storage import Store
from workflows.demo import seed_demo_studies
with Store(sys.argv[1]) as store:
    seed_demo_studies(store)
"""

#: Runs ``tunelab ARGS`` in process, then prints what it imported of the packages a light command must not pay for.
COMMAND_PROBE = """
import sys
from app.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("imported:" + ",".join(sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "pandas", "pyarrow", "scipy"})))
"""


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("demo") / "t.duckdb")
    subprocess.run([sys.executable, "-c", SEED, db], check=True, timeout=300)
    return db


def imported_by(*args: str) -> tuple[str, set[str]]:
    """What ``tunelab ARGS`` printed, and which of numpy, pandas, pyarrow and scipy it imported."""
    done = subprocess.run([sys.executable, "-c", COMMAND_PROBE, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    output, _, names = done.stdout.rpartition("imported:")
    return output, set(filter(None, names.strip().split(",")))


def test_listing_studies_imports_neither_pandas_nor_numpy(demo_db):
    """A light command starts without pandas (0.5-0.7 s of CPU alone) and numpy (0.1-0.3 s): the store lists studies
    from plain rows, and reading a stored space builds no array."""
    output, imported = imported_by("--db", demo_db, "study", "list")
    assert "Paper toy problem" in output and imported == set(), (output, imported)


def test_exporting_a_measured_best_imports_neither_pandas_nor_numpy_nor_scipy(demo_db, tmp_path):
    """The best of plain rows from the store, written as text: no frame, and no t-interval (scipy) for a configuration
    measured once."""
    header = tmp_path / "best.h"
    output, imported = imported_by("--db", demo_db, "export", "best", "--study", "Paper toy problem", "--format",
                                   "header", "--out", str(header))
    assert "best of 'Paper toy problem'" in output and imported == set(), (output, imported)
    assert "#define x1 " in header.read_text()


SPACE_PROBE = """
import sys
from engine.space.factors import Space
space = Space.from_dict({"factors": [{"name": "a", "levels": [1, 2, 4]}, {"name": "b", "levels": [-1.5, 0.5]},
                                     {"name": "c", "levels": [True, False]}],
                         "constraints": ["a <= 2 * b + 4 and b >= -1 or c == True", "min(a, 3) ** 2 < 10"]})
print(space.size, "numpy" in sys.modules)
"""


def test_reading_a_space_and_checking_its_constraints_imports_no_numpy():
    """Constraints are checked when a space is read; only a constant part beyond a literal (``2**10``) is evaluated
    then, and that alone would import numpy."""
    done = subprocess.run([sys.executable, "-c", SPACE_PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["12", "False"]
