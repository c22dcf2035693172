"""Issue 31 §5: ``tunelab --help`` starts like a small tool. Building every sub-command's parser and its help
must not import the numerics, the dashboard or the database (each costs 0.1–2 s of CPU); a command imports
what it uses when it runs. A help whose epilog is a table of what the command runs (``tune --help``: the
strategies' options) is written from those modules, on demand."""

from __future__ import annotations

import subprocess
import sys

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
print(",".join(sorted(m for m in ("statsmodels", "scipy.stats", "scipy.optimize") if m in sys.modules)))
"""


def test_an_analysis_imports_neither_statsmodels_nor_scipy_stats_nor_scipy_optimize():
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

LIST_PROBE = """
import sys
from app.cli import main
try:
    main(["--db", sys.argv[1], "study", "list"])
except SystemExit:
    pass
print("imported:" + ",".join(sorted({m.split(".")[0] for m in sys.modules} & {"pandas", "pyarrow", "scipy"})))
"""


def test_listing_studies_imports_no_pandas(tmp_path):
    """A light command starts without pandas (0.5-0.7 s of CPU alone): the store lists studies from plain rows."""
    db = str(tmp_path / "t.duckdb")
    subprocess.run([sys.executable, "-c", SEED, db], check=True, timeout=300)
    done = subprocess.run([sys.executable, "-c", LIST_PROBE, db], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Paper toy problem" in done.stdout and done.stdout.strip().endswith("imported:"), done.stdout
