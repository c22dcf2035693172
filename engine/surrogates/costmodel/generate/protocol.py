"""The measurement protocol of costmodel.md §4.4 on any clock and any blocking callables, so its arithmetic is
tested on fake timings and the generator only supplies compiled programs.

* each configuration is called in batches lasting ≥ ``min_batch_s`` (one call's dispatch cost, 10–20 µs, is
  then spread thin), ``repeats`` batches per pass, and the **minimum** per-call time is kept: interference from
  other jobs only ever adds time;
* within a pass the configurations of a program are interleaved (repeat r of every configuration, in a shuffled
  order, before repeat r + 1), so drift hits all of them alike;
* the caller runs ``passes`` passes some time apart; a configuration whose pass minima disagree by more than
  ``tolerance`` is measured again (up to ``retries`` more passes) and flagged unstable when no two passes agree;
* a configuration whose single call exceeds ``max_call_s`` is not timed (an error run, like TpuGraphs'
  time-outs); one under ``small_s`` is flagged: dispatch overhead dominates it.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.errors import UserError

Clock = Callable[[], int]
Call = Callable[[], object]


@dataclass(frozen=True)
class Protocol:
    repeats: int = 9
    min_batch_s: float = 0.005
    passes: int = 2
    tolerance: float = 0.10
    retries: int = 1
    small_s: float = 50e-6
    max_call_s: float = 0.5

    def __post_init__(self) -> None:
        if self.repeats < 1 or self.passes < 1 or self.retries < 0:
            raise UserError(f"protocol: repeats and passes must be ≥ 1 and retries ≥ 0, got {self.repeats}, {self.passes}, {self.retries}")
        if not (self.min_batch_s > 0 and self.tolerance > 0 and self.max_call_s > 0 and self.small_s >= 0):
            raise UserError("protocol: batch length, tolerance and the call limit must be > 0")

    @property
    def slots(self) -> int:
        """Passes a configuration may get: the planned ones plus the re-measurements."""
        return self.passes + self.retries


def calls_per_batch(call_ns: float, min_batch_ns: float) -> int:
    """Calls making a batch last at least ``min_batch_ns`` (at least one)."""
    return max(1, math.ceil(min_batch_ns / max(call_ns, 1.0)))


def calibrate(call: Call, clock: Clock, protocol: Protocol) -> int:
    """Calls per batch for ``call``, or 0 when one call exceeds ``max_call_s`` (not timed). A warm-up call first
    (first calls allocate), then one timed call; a batch of that many is checked once, as one call's time is
    noisy."""
    call()
    started = clock()
    call()
    single = clock() - started
    if single > protocol.max_call_s * 1e9:
        return 0
    min_batch = protocol.min_batch_s * 1e9
    calls = calls_per_batch(single, min_batch)
    if calls > 1:
        calls = max(calls, calls_per_batch(time_batch(call, calls, clock) / calls, min_batch))
    return calls


def time_batch(call: Call, calls: int, clock: Clock) -> float:
    """Nanoseconds of ``calls`` back-to-back calls."""
    started = clock()
    for _ in range(calls):
        call()
    return float(clock() - started)


def measure_pass(calls: Sequence[Call], counts: Sequence[int], repeats: int, clock: Clock, rng: random.Random) -> np.ndarray:
    """(configurations, repeats) per-call ns of one interleaved pass; NaN for a configuration with count 0."""
    times = np.full((len(calls), repeats), np.nan)
    timed = [i for i, count in enumerate(counts) if count > 0]
    for r in range(repeats):
        rng.shuffle(timed)
        for i in timed:
            times[i, r] = time_batch(calls[i], counts[i], clock) / counts[i]
    return times


def pass_minima(repeats_ns: np.ndarray) -> np.ndarray:
    """(c, slots) minimum per-call time of each pass from (c, slots, repeats); NaN where a pass was not run."""
    measured = ~np.isnan(repeats_ns).all(axis=2)
    minima = np.full(repeats_ns.shape[:2], np.nan)
    minima[measured] = np.nanmin(repeats_ns[measured], axis=1)
    return minima


def disagreeing(minima: np.ndarray, tolerance: float) -> np.ndarray:
    """Configurations whose two fastest passes differ by more than ``tolerance`` (False with fewer than two passes).
    After the planned passes this is "the passes disagree", which triggers a re-measurement; after it, a
    re-measurement that agrees with either earlier pass confirms the minimum. Interference only adds time (on a
    shared core a competing job doubles a call), so the slow pass is the one to distrust."""
    ordered = np.sort(minima, axis=1)  # NaN (a pass not run) sorts last
    counted = np.isfinite(ordered[:, :2]).all(axis=1) if minima.shape[1] >= 2 else np.zeros(len(minima), bool)
    flagged = np.zeros(len(minima), bool)
    flagged[counted] = ordered[counted, 1] / ordered[counted, 0] - 1.0 > tolerance
    return flagged


def pass_noise(minima: np.ndarray) -> np.ndarray:
    """|log(pass 1 ÷ pass 2)| of each configuration timed in both first passes: the noise floor a model faces."""
    both = np.isfinite(minima[:, :2]).all(axis=1) if minima.shape[1] >= 2 else np.zeros(len(minima), bool)
    noise: np.ndarray = np.abs(np.log(minima[both, 0] / minima[both, 1]))
    return noise


def kept_runtime(minima: np.ndarray) -> np.ndarray:
    """int64 ns per configuration: the minimum over its passes, −1 (an error run) when it was never timed."""
    runtime = np.full(len(minima), -1, np.int64)
    timed = np.isfinite(minima).any(axis=1)
    runtime[timed] = np.rint(np.nanmin(minima[timed], axis=1)).astype(np.int64)
    return runtime


@dataclass
class Timings:
    """Everything measured for the configurations of one program: ``repeats_ns`` (c, slots, repeats) per-call ns
    (NaN: not run), ``calls`` per batch (0: not timed, too slow), ``load`` (c, slots) 1-minute load average as
    each pass ended."""

    repeats_ns: np.ndarray
    calls: np.ndarray
    load: np.ndarray

    @classmethod
    def empty(cls, configurations: int, protocol: Protocol) -> Timings:
        return cls(np.full((configurations, protocol.slots, protocol.repeats), np.nan), np.zeros(configurations, np.int64),
                   np.full((configurations, protocol.slots), np.nan))

    def record(self, slot: int, rows: np.ndarray, times: np.ndarray) -> None:
        """Store one pass over the configurations ``rows``."""
        self.repeats_ns[rows, slot] = times
        self.load[rows, slot] = os.getloadavg()[0]

    def minima(self) -> np.ndarray:
        return pass_minima(self.repeats_ns)
