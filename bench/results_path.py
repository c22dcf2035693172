"""The owner's results path (issue 35 §3): how many results per second the process that owns the DuckDB file stores.

A campaign of ``--results`` instant measurements (a synthetic objective) through an executor that finishes every task
at once and reports ``--slots`` workers (queueing as many again, as a pool does), so rounds of up to 2 × slots results
reach the owner as fast as it takes them:
only storing is measured. Side by side in one run, on fresh database files: one transaction per result (the
previous recorder, ``Store.record_measurement`` per result) and a round per transaction (``StoreRecorder``). Goal:
≥ 2,000 results/s.

    .venv/bin/python bench/results_path.py [--results 5000] [--slots 16,64] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.execution import Campaign, InlineExecutor  # noqa: E402
from engine.execution.worker import Task  # noqa: E402
from engine.io.spec import TEMPLATES, parse_spec  # noqa: E402
from engine.runners import runner_from_spec  # noqa: E402
from engine.runners.base import MeasureResult  # noqa: E402
from engine.surrogates.difftune.measure import cpu_identity  # noqa: E402
from storage import Store  # noqa: E402
from workflows.recording import store_recorder  # noqa: E402


class InstantPool(InlineExecutor):
    """Finishes each task at once with a made-up result (no runner: only what the owner does is timed) and says
    it has ``slots`` workers."""

    def __init__(self, slots: int) -> None:
        super().__init__()
        self._slots = slots

    def slots(self) -> int:
        return self._slots

    def queue_depth(self) -> int:
        return self._slots  # a pool's: as many queued as running

    def submit(self, task: Task) -> Future[list[MeasureResult]]:
        future: Future[list[MeasureResult]] = Future()
        value = sum(float(v) ** 2 for v in task.config.values())
        future.set_result([MeasureResult(value, repeat=task.start + i, metadata={"note": "bench"})
                           for i in range(task.repeats)])
        return future


def one_run(folder: Path, results: int, slots: int, batched: bool) -> float:
    """Results per second stored by one campaign."""
    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    db = folder / f"{'round' if batched else 'each'}-{slots}-{time.monotonic_ns()}.duckdb"
    with Store(db) as store:
        study = store.create_study(spec)
        configs = spec.space.sample(results, seed=3)
        runner = runner_from_spec(spec.runner, space=spec.space)
        if batched:
            record: Any = store_recorder(store, study, strategy="design")
        else:
            def record(config: dict[str, Any], result: MeasureResult) -> None:
                store.record_measurement(study, config, result.value, result.status, repeat=result.repeat,
                                         strategy="design")
        started = time.perf_counter()
        Campaign(runner, InstantPool(slots), space=spec.space).run(configs, record)
        took = time.perf_counter() - started
        assert len(store.measurements(spec.name)) == len(configs)
    return len(configs) / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=5000)
    parser.add_argument("--slots", default="16,64")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    identity = cpu_identity()
    print(f"CPU {identity.model_name} ({identity.short_id}); {args.results} results per campaign, {args.reps} campaigns each")
    with tempfile.TemporaryDirectory() as tmp:
        for slots in (int(s) for s in args.slots.split(",")):
            rates: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.reps):
                for batched in (False, True):  # alternated, so a busy moment of the machine hits both
                    rates[batched].append(one_run(Path(tmp), args.results, slots, batched))
            each, rounds = statistics.median(rates[False]), statistics.median(rates[True])
            print(f"{slots:3d} workers: one transaction per result {each:7.0f} results/s; one per round {rounds:7.0f} "
                  f"results/s ({rounds / each:.1f}×)", flush=True)


if __name__ == "__main__":
    main()
