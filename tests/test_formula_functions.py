"""Class 2 of issue 12: every function the formula whitelist accepts evaluates on every code path that
reads a formula (the fit, each ANOVA type, prediction, the profiler, the D-optimal design), one case per
function, and through the CLI; a function that validated and then failed was a defect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.analysis import LinearModel, anova
from engine.analysis.exploration import profile
from engine.analysis.prediction import predicted_minimum
from engine.design.optimal import optimal_design
from engine.space.expr import FORMULA_FUNCTIONS
from tests.conftest import REPO_ROOT

DATA = pd.read_csv(Path(__file__).parent / "reference" / "cases" / "functions.csv")
FUNCTIONS = sorted(FORMULA_FUNCTIONS)
#: What each function computes, to check the model matrix against (C: a factor, one dummy per level but one).
EXPECTED = {"I": lambda x: x, "abs": np.abs, "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10,
            "sqrt": np.sqrt}


def term(function: str) -> str:
    column = "x6" if function.endswith("abs") else "x1"  # x6 has negative values: abs() changes it
    return f"{function}({column})"


def test_the_whitelist_is_what_these_tests_cover():
    assert {f.removeprefix("np.") for f in FUNCTIONS} - {"C"} == set(EXPECTED)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_evaluates_on_every_path(function):
    data = DATA.assign(x1=DATA["x1"].round(0)) if function == "C" else DATA  # a factor needs repeated levels
    model = LinearModel(f"y ~ {term(function)} + x2").fit(data)
    if function != "C":
        column = data["x6" if function.endswith("abs") else "x1"].to_numpy()
        np.testing.assert_allclose(model.matrix_.X[:, 1], EXPECTED[function.removeprefix("np.")](column), rtol=1e-15)
    for typ in (1, 2, 3):
        assert np.isfinite(anova(model, typ)["Sum Sq"]).all()
    candidates = data.drop(columns="y")
    assert np.isfinite(predicted_minimum(model, candidates).predicted)
    at = candidates.iloc[0].to_dict()
    assert np.isfinite(profile(model, at)["predicted"]).all()
    design = optimal_design(candidates, f"~ {term(function)} + x2", trials=model.qr_.rank + 2, seed=1)
    assert design.runs == model.qr_.rank + 2


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("tunelab")), *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_the_whole_whitelist_through_the_cli(tmp_path):
    """One formula with every function, one column each, through ``tunelab analyze`` (Type III, so the
    sum-coded refit evaluates them too, and the prediction over candidates) and ``tunelab design dopt``:
    a process pays seconds of imports, so the whitelist shares two."""
    rng = np.random.default_rng(5)
    columns = {f"a{i}": rng.uniform(-3.0 if f.endswith("abs") else 0.5, 4.0, 60).round(3) for i, f in enumerate(FUNCTIONS)}
    frame = pd.DataFrame(columns)
    frame[f"a{FUNCTIONS.index('C')}"] = rng.choice([1, 2, 3], 60)
    terms = [f"{f}(a{i})" for i, f in enumerate(FUNCTIONS)]
    frame["y"] = rng.normal(size=60) + frame.sum(axis=1)
    data, candidates = tmp_path / "functions.csv", tmp_path / "candidates.csv"
    frame.to_csv(data, index=False)
    frame.drop(columns="y").to_csv(candidates, index=False)

    result = _cli("analyze", "--csv", str(data), "--formula", "y ~ " + " + ".join(terms), "--anova-type", "3",
                  "--predict-over", str(candidates), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [row["term"] for row in out["anova"]] == ["(Intercept)", *terms, "Residuals"]
    assert out["predicted_minimum"] is not None
    design = _cli("design", "dopt", "--candidates", str(candidates), "--formula", "~ " + " + ".join(terms),
                  "--trials", "20", "--json")
    assert design.returncode == 0, design.stderr
    assert json.loads(design.stdout)["runs"] == 20
