"""PythonRunner: measure a Python callable named by its import path (``package.module:function``).

The callable is imported (never evaluated from text) and called with the configuration as a dict.
``mode: return`` (default): it returns the metric, or a mapping with ``value`` (and optionally
``status``, ``error`` and other keys kept as metadata). ``mode: time``: the runner times the call
with a monotonic clock and ignores what it returns, except for the correctness check, a callable
``check(config, output) -> bool`` also named by import path.

Timeout: where the call runs in a process's main thread (local pool, timing mode, inline) a
SIGALRM interrupts it; elsewhere (a Dask worker thread) a call that overran is recorded as
``timeout`` once it returns.
"""

from __future__ import annotations

import importlib
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_options

MODES = ("return", "time")


def resolve(target: str, what: str, path: str | None = None) -> Callable:
    """The callable at ``module:attr`` (or ``module.attr``); a one-line error if it is not there."""
    if not isinstance(target, str) or not target.strip():
        raise UserError(f"{what}: expected an import path like 'package.module:function', got {target!r}")
    module_name, sep, attr = target.partition(":")
    if not sep:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise UserError(f"{what}: {target!r} is not 'package.module:function'")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"{what}: cannot import module {module_name!r} ({exc})") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"{what}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UserError(f"{what}: {target!r} is not callable")
    return obj


@contextmanager
def alarm(seconds: float | None):
    """Raise a 'timeout' MeasureError in the main thread after ``seconds`` (no-op elsewhere)."""
    usable = seconds is not None and threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM")
    if not usable:
        yield
        return

    def expired(signum, frame):
        raise MeasureError("timeout", f"call interrupted after {seconds:g} s (timeout)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class PythonRunner(Runner):
    kind = "python"
    OPTIONS = ("callable", "mode", "path")

    def __init__(self, target: str, *, mode: str = "return", path: str | None = None, **common) -> None:
        super().__init__(**common)
        if mode not in MODES:
            raise UserError(f"runner 'python': mode {mode!r} must be one of {', '.join(MODES)}")
        self.target, self.mode, self.path = target, mode, path
        resolve(target, "runner 'python': callable", path)  # fail at once, in one line, when it is wrong
        if isinstance(self.check, str):
            resolve(self.check, "runner 'python': check", path)

    @classmethod
    def from_spec(cls, spec: Mapping, **_) -> PythonRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if "callable" not in spec:
            raise UserError("runner 'python': needs 'callable' ('package.module:function')")
        return cls(spec["callable"], mode=spec.get("mode", "return"), path=spec.get("path"), **cls.common(spec))

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        function = resolve(self.target, "runner 'python': callable", self.path)
        checker = resolve(self.check, "runner 'python': check", self.path) if isinstance(self.check, str) else None
        trial = Trial(metadata={"callable": self.target})

        def once() -> float:
            began = time.perf_counter()
            with alarm(self.timeout):
                output = function(dict(config))
            elapsed = time.perf_counter() - began
            if self.timeout is not None and elapsed > self.timeout:
                raise MeasureError("timeout", f"call took {elapsed:.3g} s, more than the {self.timeout:g} s timeout")
            if checker is not None and not checker(dict(config), output):
                raise MeasureError("failed", f"correctness check {self.check} rejected the output")
            return elapsed if self.mode == "time" else self._value(output, trial.metadata)

        measured = self.repeat_calls(once, repeats)
        measured.metadata.update(trial.metadata)
        return measured

    @staticmethod
    def _value(output: Any, metadata: dict) -> float:
        if isinstance(output, Mapping):
            status = output.get("status", "ok")
            if status != "ok":
                raise MeasureError(status if status in ("failed", "timeout", "invalid") else "failed",
                                   str(output.get("error") or f"callable reported status {status!r}"))
            metadata.update({k: v for k, v in output.items() if k not in ("value", "status", "error")})
            output = output.get("value")
        try:
            value = float(output)
        except (TypeError, ValueError):
            raise MeasureError("failed", f"callable returned {output!r:.80}, not a number") from None
        if not math.isfinite(value):
            raise MeasureError("failed", f"callable returned a non-finite value {value}")
        return value
