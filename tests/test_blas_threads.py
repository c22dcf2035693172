"""Issue 31 §4: the analysis runs its dense algebra on one BLAS thread (OpenBLAS's threads spin against a busy
machine's other processes: a 10,000 × 34 QR cost 13× the CPU on two threads), and gives the thread count back."""

from __future__ import annotations

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_info

from engine.analysis import LinearModel
from engine.analysis.blas import single_blas_thread


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_a_fit_runs_on_one_blas_thread_and_restores_the_count():
    before = _blas_threads()
    seen: list[list[int]] = []
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"x": rng.uniform(1, 2, 40)})
    data["y"] = data["x"] + rng.normal(0, 0.1, 40)

    class Watched(LinearModel):
        def _resolve_transform(self):  # called inside fit, after the QR
            seen.append(_blas_threads())
            return super()._resolve_transform()

    Watched("y ~ x").fit(data)
    assert seen and all(count == 1 for count in seen[0]) and seen[0]
    assert _blas_threads() == before


def test_nested_limits_keep_one_thread():
    inner = single_blas_thread(_blas_threads)
    outer = single_blas_thread(lambda: (inner(), _blas_threads()))
    first, after_inner = outer()
    assert set(first) == {1} and set(after_inner) == {1}


LATE_SCIPY = """
from threadpoolctl import threadpool_info
from engine.analysis.blas import single_blas_thread
import numpy
single_blas_thread(lambda: None)()  # the first use, before scipy's own OpenBLAS is loaded
import scipy.linalg.blas
print(single_blas_thread(lambda: sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}))())
"""


def test_a_blas_library_loaded_after_the_first_use_is_limited_too():
    """Was: the controller built by the first fit knew numpy's OpenBLAS only; scipy's, loaded later by the design's
    exchange, kept two threads (the Design page's build took 7-9 s instead of 1 s beside a busy process)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LATE_SCIPY], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1]"
