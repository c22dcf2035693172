"""Bench: the CLI's start-up (issue 31 §5: ``tunelab --help`` ≤ 0.15 s CPU; ``study list``, ``export best`` ≤ 0.3 s).

Each command is a whole process, run ``--reps`` times in turn with the others (a round runs every command once,
in an order that alternates between rounds, after one round that is not counted, so that no command pays for
compiling bytecode); its CPU seconds are the user + system time of the process and its children. Printed: the
CPU's identity, then per command the median and the minimum, the median's ratio to python's and to duckdb's import
and its excess over duckdb's import:

* ``python -c pass``: the interpreter alone, the floor of any Python command;
* ``python -c "import duckdb"``: the floor of a command that reads the database, and with ``duckdb.connect(db)``
  (DuckDB starting a database, even an in-memory one, and closing it) the floor of one that opens it;
* ``tunelab --help``; ``tunelab study list``; ``tunelab export best --format header`` (the paper's toy study,
  measured), both on a fresh database holding the demo studies;
* ``Rscript -e 0``: R's start, a small tool's (when Rscript is on PATH).

Bytecode is written (``PYTHONDONTWRITEBYTECODE`` is unset for the commands), so the first round leaves every module
compiled: where it is set, every process compiles again each module changed since its bytecode was written (a
checkout just edited: 0.1-0.2 s), a cost of the machine's setting, not of the code measured.

``--against DIR`` also runs the three tunelab commands of another checkout (``git worktree add DIR HEAD~1``: the
code before a change), alternated with this one's in the same rounds, so a before/after is one run.

    .venv/bin/python bench/cli_startup.py [--reps 15] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: The demo study whose measured best ``export best`` writes.
STUDY = "Paper toy problem"


#: The commands' environment: this one, writing bytecode.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def cpu_of(command: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one whole process and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tunelab(tree: Path, db: Path, out: Path, label: str) -> dict[str, tuple[list[str], Path]]:
    """The three tunelab commands of the checkout at ``tree``, named with ``label``."""
    cli = [sys.executable, "-m", "app.cli"]
    return {
        f"tunelab --help{label}": ([*cli, "--help"], tree),
        f"study list{label}": ([*cli, "--db", str(db), "study", "list"], tree),
        f"export best{label}": ([*cli, "--db", str(db), "export", "best", "--study", STUDY, "--format", "header",
                                 "--out", str(out / "best.h")], tree),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another checkout whose tunelab commands run alongside")
    args = parser.parse_args()
    from engine.surrogates.difftune.measure import cpu_identity
    from storage import Store
    from workflows.demo import seed_demo_studies

    identity = cpu_identity()
    print(f"CPU: {identity.model_name} ({identity.short_id}); Python {sys.version.split()[0]}; {args.reps} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        db, out = Path(tmp) / "demo.duckdb", Path(tmp)
        with Store(db) as store:
            seed_demo_studies(store)
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], REPO),
            "python -c 'import duckdb'": ([sys.executable, "-c", "import duckdb"], REPO),
            "... and duckdb.connect(db)": ([sys.executable, "-c", "import sys, duckdb; duckdb.connect(sys.argv[1]).close()",
                                            str(db)], REPO),
            **tunelab(REPO, db, out, ""),
        }
        if args.against is not None:
            commands |= tunelab(args.against.resolve(), db, out, f" ({args.against})")
        rscript = shutil.which("Rscript")
        if rscript is not None:
            commands["Rscript -e 0"] = ([rscript, "-e", "0"], REPO)
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for rep in range(-1, args.reps):  # round -1 warms up: bytecode, the page cache
            for name in commands if rep % 2 == 0 else list(commands)[::-1]:
                seconds = cpu_of(*commands[name])
                if rep >= 0:
                    cpu[name].append(seconds)
    floor = statistics.median(cpu["python -c pass"])
    duck = statistics.median(cpu["python -c 'import duckdb'"])
    width = max(map(len, cpu))
    print(f"{'command':{width}s}  s CPU: median (min)   x python  x duckdb  - duckdb")
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"{name:{width}s}         {median:6.3f} ({min(values):.3f})  {median / floor:7.2f}  {median / duck:7.2f}  "
              f"{median - duck:+7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
