"""The built-in C kernels: generated, compiled with gcc, run, checked against a reference and
against numpy; the binary cache, compile failures, bad configurations and timeouts."""

import shutil

import numpy as np
import pytest

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.runners.ckernel import BASELINE, KERNELS, CKernelRunner, cache_dir

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

N = 40


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """A fresh binary cache for this module: compiles are real, and shared between its tests."""
    folder = tmp_path_factory.mktemp("tunelab-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNELAB_CACHE", str(folder))
        yield folder


def expected_checksum(kernel: str, n: int, steps: int = 10) -> float:
    """The kernel's output sum computed independently with numpy, from the same initial data."""
    i, j = np.indices((n, n))
    if kernel == "mm":
        a, b = ((i * j + 1) % n) / n, ((i * (j + 1)) % n) / n
        return float((a @ b).sum())
    if kernel == "bicg":
        a = ((i * (j + 1)) % n) / n
        p, r = (np.arange(n) % 7) / 7.0, ((np.arange(n) * 3) % n) / n
        return float((a @ p).sum() + (r @ a).sum())
    if kernel == "gesummv":
        a, b, x = ((i * j + 1) % n) / n, ((i * j + 2) % n) / n, (np.arange(n) % n) / n
        return float((1.5 * a @ x + 1.2 * b @ x).sum())
    a = (i * (j + 2) + 2) / n
    b = a.copy()
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[:-2, 1:-1] + b[2:, 1:-1])
    return float(a.sum())


TRANSFORMED = {"T_I": 8, "T_J": 16, "T_K": 8, "U_I": 2, "U_J": 4, "U_K": 2, "SCR": True, "VEC": True, "OMP": True,
               "THREADS": 2, "OPT": "O2", "MARCH": True, "FUNROLL": True}


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_kernel_compiles_runs_and_matches_the_reference(name):
    kernel = KERNELS[name]
    runner = CKernelRunner(name, n=N, repeats=2, warmup=1)
    for config in ({}, {k: v for k, v in TRANSFORMED.items() if k in kernel.factor_names}):
        results = runner.measure(config)
        assert [r.status for r in results] == ["ok", "ok"], results[0].error
        meta = results[0].metadata
        assert meta["rel_error"] <= 1e-9
        assert meta["checksum"] == pytest.approx(expected_checksum(name, N), rel=1e-10)
        assert all(r.value > 0 for r in results)
        assert meta["baseline_s"] > 0
        assert results[1].metadata["speedup"] == pytest.approx(meta["baseline_s"] / results[1].value)
    assert "-fopenmp" in meta["flags"] and "-march=native" in meta["flags"] and "-O2" in meta["flags"]


def test_binaries_are_cached_by_source_and_flags(cache):
    runner = CKernelRunner("gesummv", n=N, baseline=False)
    first = runner.measure({"T_I": 16, "SCR": True})[0].metadata
    again = runner.measure({"T_I": 16, "SCR": True})[0].metadata
    other = runner.measure({"T_I": 16, "SCR": True, "FUNROLL": True})[0].metadata
    assert not first["cached_binary"] and first["compile_s"] > 0
    assert again["cached_binary"] and again["compile_s"] == 0
    assert not other["cached_binary"]
    assert cache_dir() == cache
    assert len(list((cache / "ckernel").glob("k-*"))) >= 2


def test_a_failing_compile_is_recorded_with_the_compilers_message():
    runner = runner_from_spec({"kind": "ckernel", "kernel": "mm", "n": N, "cflags": ["-mno-such-option"], "repeats": 3})
    results = runner.measure({"T_J": 8})
    assert [r.status for r in results] == ["failed"]
    assert "compile failed" in results[0].error and "-mno-such-option" in results[0].error
    assert "unrecognized command-line option" in results[0].error


def test_bad_configurations_are_invalid_not_crashes():
    runner = CKernelRunner("mm", n=N, baseline=False)
    cases = {"U_I": 2, "T_I": 0, "OPT": "O9", "VEC": "maybe"}
    for name, value in cases.items():
        result = runner.measure({name: value})[0]
        assert result.status == "invalid", (name, result)
        assert name in result.error
    assert runner.measure({"THREADS": 2})[0].error == "THREADS=2 needs OMP on"


def test_a_kernel_run_over_its_timeout_is_killed_and_recorded():
    runner = CKernelRunner("mm", n=700, repeats=50, timeout=0.3, baseline=False, check=False)
    result = runner.measure({"OPT": "O0"})
    assert [r.status for r in result] == ["timeout"]
    assert "0.3 s" in result[0].error


def test_default_spaces_hold_the_baseline_and_specs_are_checked():
    import pandas as pd

    for kernel in KERNELS.values():
        space = kernel.space()
        assert space.names == list(kernel.factor_names)
        baseline = pd.DataFrame([{k: BASELINE[k] for k in kernel.factor_names}])
        assert space.valid_mask(baseline).all()
    with pytest.raises(UserError, match="kernel 'fft'"):
        runner_from_spec({"kind": "ckernel", "kernel": "fft"})
    with pytest.raises(UserError, match="needs 'kernel'"):
        runner_from_spec({"kind": "ckernel"})
    with pytest.raises(UserError, match="n 2"):
        runner_from_spec({"kind": "ckernel", "kernel": "mm", "n": 2})
