"""Bench: ``tunelab analyze`` against R on the same 10,000 rows (issue 31 §4: the whole process ≤ R's CPU).

10,000 rows of the Laplacian search space (its measured ``time_per_pixel`` in ns, rows drawn with seed 0), a model
of 34 columns (the 5 numeric factors linear, squared and inverted, ``temporary_size``, ``load_overlap``
(``vector_recompute`` has one level in this table), the 15 two-factor interactions of the linear terms and
``elements_number:load_overlap``), Type II. Both report the same: the fit and its
summary, the Type II ANOVA table, ncvTest and Box-Cox's λ (powerTransform). Each whole process is run
``--reps`` times, alternated, after one run each that is not counted, and its CPU seconds (user + system of the process and its children) measured;
one command line each:

* ``tunelab analyze --csv F --formula … --anova-type 2`` (prints the fit, ANOVA, coefficients, Box-Cox, ncvTest);
* ``Rscript -e 'library(car); m <- lm(…); print(summary(m)); print(Anova(m, type = 2)); print(ncvTest(m));
  print(summary(powerTransform(m)))'``.

Then the analysis alone, in this process: the fit with Box-Cox and the three ANOVA tables (issue 31 §4's
in-process figure).

    .venv/bin/python bench/analyze_vs_r.py [--reps 5] [--rows 10000]
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NUMERIC = ["elements_number", "y_component_number", "vector_length", "threads_number", "lws_y"]
LINEAR = [*NUMERIC, "temporary_size"]


def formula() -> str:
    """time_per_pixel on 33 terms: with the intercept, 34 columns."""
    terms = [*LINEAR, *(f"I({x}^2)" for x in NUMERIC), *(f"I(1/{x})" for x in NUMERIC), "load_overlap"]
    terms += [f"{a}:{b}" for a, b in itertools.combinations(LINEAR, 2)] + ["elements_number:load_overlap"]
    return "time_per_pixel ~ " + " + ".join(terms)


def cpu_of(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU, wall) seconds of one whole process, its children included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {done.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    import pandas as pd

    from engine.io.paths import data_dir
    from engine.surrogates.difftune.measure import cpu_identity

    folder = data_dir()
    if folder is None or not (folder / "laplacian" / "search_space.csv").is_file():
        print("the shared data folder (laplacian) is absent")
        return 1
    rscript = shutil.which("Rscript")
    if rscript is None:
        print("Rscript is absent (apt-get install r-base-core r-cran-car)")
        return 1
    identity = cpu_identity()
    print(f"CPU: {identity.model_name} ({identity.short_id}); OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")
    table = pd.read_csv(folder / "laplacian" / "search_space.csv")
    rows = table.sample(args.rows, random_state=0).reset_index(drop=True)
    rows["time_per_pixel"] *= 1e9  # in ns: car::Anova refuses a residual sum of squares below 1.5e-8, in any unit
    model = formula()
    r_program = (f"suppressPackageStartupMessages(library(car)); d <- read.csv(commandArgs(TRUE)[1]); "
                 f"m <- lm({model}, d); print(summary(m)); print(Anova(m, type = 2)); print(ncvTest(m)); "
                 f"print(summary(powerTransform(m)))")
    # A user's Python writes bytecode: without it every run would compile the changed modules again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "rows.csv"
        rows.to_csv(csv, index=False)
        commands = {
            "tunelab": [sys.executable, "-m", "app.cli", "analyze", "--csv", str(csv), "--formula", model,
                        "--anova-type", "2"],
            "R": [rscript, "-e", r_program, str(csv)],
        }
        print(f"{args.rows:,} rows, {model.count('+') + 2} columns, Type II; {args.reps} runs each, alternated")
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # not counted: bytecode written, files in the page cache
            cpu_of(command, env)
        for rep in range(args.reps):
            for name in commands if rep % 2 == 0 else list(commands)[::-1]:
                seconds, wall = cpu_of(commands[name], env)
                cpu[name].append(seconds)
                print(f"  rep {rep}  {name:8s} {seconds:6.2f} s CPU  {wall:6.2f} s wall")
    median = {name: statistics.median(values) for name, values in cpu.items()}
    for name, value in median.items():
        print(f"median {name:8s}: {value:.2f} s CPU (min {min(cpu[name]):.2f})")
    print(f"tunelab / R (CPU, medians): {median['tunelab'] / median['R']:.2f}")
    seconds = in_process(rows, model, args.reps)
    print(f"in-process fit (Box-Cox) + ANOVA I, II, III: median {statistics.median(seconds):.3f} s CPU "
          f"(min {min(seconds):.3f}); / R's whole process: {statistics.median(seconds) / median['R']:.2f}")
    return 0


def in_process(rows: object, model: str, reps: int) -> list[float]:
    """CPU seconds of the analysis itself in this process (imports paid before): the figure a before/after of
    the numerics compares (``PYTHONPATH=<other checkout>`` runs this bench on that code)."""
    from engine.analysis import LinearModel, anova

    def once() -> float:
        started = time.process_time()
        fitted = LinearModel(model, transform="boxcox").fit(rows)
        for typ in (1, 2, 3):
            anova(fitted, typ)
        return time.process_time() - started

    once()
    return [once() for _ in range(reps)]


if __name__ == "__main__":
    sys.exit(main())
