"""`make run` installs the runtime only; `make test` adds the test stack (issue 17, defect 14)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from engine.io.paths import REPO_ROOT

#: What only the tests need: none of it may reach a person who only wants the dashboard.
TEST_ONLY = {"playwright", "pytest", "pytest-timeout", "mypy", "ruff", "hypothesis", "statsmodels"}
#: What every section of the dashboard needs from `make run` (issue 33 §7): the surrogates' learning and TPE.
SECTIONS = {"torch", "torch-geometric", "optuna"}


def pins(name: str) -> dict[str, str]:
    text = (REPO_ROOT / name).read_text()
    return dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==([^\s;\\]+)", text, re.M))


def test_the_runtime_lock_holds_no_test_stack_and_the_same_versions_as_the_test_lock():
    run, full = pins("requirements-run.lock"), pins("requirements.lock")
    assert {"streamlit", "duckdb", "numpy", "scipy"} | SECTIONS <= set(run)
    assert run["torch"].endswith("+cpu")  # the CPU build, not several GB of CUDA
    assert not TEST_ONLY & set(run)
    assert TEST_ONLY - {"pytest-timeout"} <= set(full)
    assert {name: full.get(name) for name in run} == run  # one resolution: `make lock` constrains one by the other


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_installs_from_the_runtime_lock_and_never_syncs_the_test_stack():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test
    plan = subprocess.run(["make", "--no-print-directory", "-n", "-B", "run"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    syncs = re.findall(r"pip sync [^;&]*", plan)
    assert syncs and all("--require-hashes" in s and s.rstrip().endswith("requirements-run.lock") for s in syncs)
    assert "rm -f .venv/.installed" in plan  # the next `make test` syncs its stack back
    assert plan.strip().splitlines()[-1].endswith("serve --port 8501")
