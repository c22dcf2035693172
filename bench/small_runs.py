"""Bench: a small run end to end (issue 31 §3: 8 evaluations of a synthetic function took 12 s; goal ≤ 2 s).

The toy study (synthetic runner), a design of 8 configurations, measured by ``tunelab run`` as a user types it:
the whole command (start-up, opening the database, the executor, measuring, storing), with ``--executor local``
(the process pool, the default before) against ``--executor auto`` (the default now: in process for a runner
with nothing to isolate), alternated, each on a fresh copy of the same database. Prints the CPU, each run's wall
and CPU seconds, the medians and their ratio.

    .venv/bin/python bench/small_runs.py [--reps 5] [--runs 8]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.io.spec import TEMPLATES, parse_spec  # noqa: E402
from storage import Store  # noqa: E402

EXECUTORS = ("local", "auto")


def prepared(folder: Path, runs: int) -> Path:
    """A database holding the toy study and one design of ``runs`` configurations, nothing measured."""
    db = folder / "base.duckdb"
    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    with Store(db) as store:
        study = store.create_study(spec)
        store.save_design(study, spec.space.sample(runs, seed=1), name=f"{runs} random", kind="random")
    return db


def timed_run(db: Path, study: str, executor: str) -> tuple[float, float]:
    """(wall, CPU of the command and its children) seconds of one ``tunelab run``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "app.cli", "--db", str(db), "run", "--study", study,
                           "--executor", executor], capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"tunelab run --executor {executor} failed: {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    from engine.surrogates.difftune.measure import cpu_identity

    identity = cpu_identity()
    print(f"CPU: {identity.model_name} ({identity.short_id}); {args.runs} synthetic evaluations per run")
    study = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml").name
    walls: dict[str, list[float]] = {e: [] for e in EXECUTORS}
    cpus: dict[str, list[float]] = {e: [] for e in EXECUTORS}
    with tempfile.TemporaryDirectory() as tmp:
        base = prepared(Path(tmp), args.runs)
        for rep in range(args.reps):
            for executor in EXECUTORS if rep % 2 == 0 else EXECUTORS[::-1]:
                db = Path(tmp) / f"{executor}-{rep}.duckdb"
                shutil.copy(base, db)
                wall, cpu = timed_run(db, study, executor)
                walls[executor].append(wall)
                cpus[executor].append(cpu)
                print(f"  rep {rep}  --executor {executor:5s}  {wall:6.2f} s wall  {cpu:6.2f} s CPU")
    median = {e: statistics.median(walls[e]) for e in EXECUTORS}
    for e in EXECUTORS:
        print(f"median --executor {e:5s}: {median[e]:.2f} s wall (min {min(walls[e]):.2f}, max {max(walls[e]):.2f}), "
              f"{statistics.median(cpus[e]):.2f} s CPU")
    print(f"auto / local (wall, medians): {median['auto'] / median['local']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
