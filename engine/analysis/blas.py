"""One BLAS thread for the engine's dense algebra (least squares, ANOVA, the exchange of an optimal design).

Its matrices are small (10,000 × 34 is a large fit), and on a machine whose cores are shared OpenBLAS's own
threads spin against the other processes: a QR of 10,000 × 34 took 0.32 s of CPU on two threads against
0.024 s on one, and even 300,000 × 100 was faster on one (7.8 s against 9.6 s; a 2-core host under load,
issue 31). One thread also gives the same floating-point results on any number of cores.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from threadpoolctl import ThreadpoolController

_P = ParamSpec("_P")
_R = TypeVar("_R")


_built: tuple[int, ThreadpoolController] | None = None


def _controller() -> ThreadpoolController:
    """The BLAS libraries loaded now. A controller sees only those loaded when it was built, and scipy brings
    its own OpenBLAS: one built by a fit before scipy was imported left the design's exchange on two threads
    (9× slower beside a busy process). It is built again (~1.5 ms) whenever a module has been imported since."""
    global _built
    if _built is None or _built[0] != len(sys.modules):
        _built = (len(sys.modules), ThreadpoolController())
    return _built[1]


def single_blas_thread(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``func`` with one BLAS thread (restored after; nested calls keep one)."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _controller().limit(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper
