"""Tunelab loads torch with OpenMP threads that sleep while they wait (engine/surrogates/_torch.py), without
passing that policy on to the programs it measures, and without overriding a policy the user chose. libgomp
reports what it read when ``OMP_DISPLAY_ENV`` asks: a spin count of 0 is the passive policy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from engine.io.paths import REPO_ROOT

PROBE = "import os, engine.surrogates._torch; print(os.environ.get('OMP_WAIT_POLICY'))"


def _load(probe: str = PROBE, cpus: set[int] | None = None, **env: str) -> tuple[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                          env={**clean, "OMP_DISPLAY_ENV": "VERBOSE", **env}, check=True,
                          preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
    return done.stdout.strip(), done.stderr


def test_torch_threads_sleep_and_the_policy_is_not_inherited() -> None:
    seen, report = _load()
    assert "GOMP_SPINCOUNT = '0'" in report, report
    assert seen == "None"


def test_a_policy_the_user_set_is_kept() -> None:
    seen, report = _load(OMP_WAIT_POLICY="ACTIVE")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in report and "GOMP_SPINCOUNT = '0'" not in report, report
    assert seen == "ACTIVE"


def test_torch_runs_one_thread_per_cpu_the_process_may_use() -> None:
    probe = "import engine.surrogates._torch as t; print(t.torch.get_num_threads())"
    one = min(os.sched_getaffinity(0))
    assert _load(probe, cpus={one})[0] == "1"  # torch counts the CPUs it may use, not the machine's (issue 33)
    assert int(_load(probe)[0]) <= len(os.sched_getaffinity(0))
