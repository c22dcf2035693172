"""Measurements per second of one small C-kernel campaign through each executor.

Same campaign everywhere: 24 configurations of the built-in matrix multiply (n=64, 3 repeats, one
process run per configuration), binaries compiled beforehand so only dispatch + run is timed.
Executors are started and warmed up first (their start-up is printed separately). Ratios are
against the local pool; the timing executor is serial and pinned, so it trades throughput for
quiet measurements.
"""

from __future__ import annotations

import os
import tempfile
import time

from engine.execution import Campaign, InlineExecutor, LocalExecutor, TimingExecutor
from engine.execution.dask_executor import DaskExecutor
from engine.runners.ckernel import KERNELS, CKernelRunner

CONFIGS = 24
REPEATS = 3


def campaign_rate(runner, executor, configs) -> tuple[float, int]:
    """(seconds, results) for one campaign over ``configs``."""
    results = []
    started = time.perf_counter()
    Campaign(runner, executor).run(configs, lambda config, result: results.append(result))
    seconds = time.perf_counter() - started
    bad = [r.error for r in results if not r.ok]
    if bad:
        raise SystemExit(f"measurement failed: {bad[0]}")
    return seconds, len(results)


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as cache:
        runner = CKernelRunner("mm", n=64, repeats=REPEATS, warmup=1, cache=cache)
        configs = KERNELS["mm"].space().sample(CONFIGS, seed=7).to_dict(orient="records")
        campaign_rate(runner, InlineExecutor(), configs)  # compile every binary and the baseline once
        print(f"campaign: {CONFIGS} configurations x {REPEATS} repeats of mm n=64 (binaries cached); {cores} cores")
        print(f"{'executor':<26}{'start-up s':>11}{'campaign s':>12}{'measurements/s':>16}{'vs local':>10}")
        rows = []
        makers = [("inline (this process)", InlineExecutor), (f"local pool ({cores} workers)", lambda: LocalExecutor(cores)),
                  ("timing (1 pinned worker)", TimingExecutor),
                  (f"dask LocalCluster ({cores} w.)", lambda: DaskExecutor(workers=cores))]
        for name, make in makers:
            started = time.perf_counter()
            with make() as executor:
                campaign_rate(runner, executor, configs[:2])  # start workers, install the runner
                startup = time.perf_counter() - started
                seconds, count = campaign_rate(runner, executor, configs)
            rows.append((name, startup, seconds, count / seconds))
        local = rows[1][3]
        for name, startup, seconds, rate in rows:
            print(f"{name:<26}{startup:>11.2f}{seconds:>12.2f}{rate:>16.1f}{rate / local:>10.2f}")


if __name__ == "__main__":
    main()
