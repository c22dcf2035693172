"""Offline benchmark: repetitions × strategies × budget over an exhaustive table, in parallel.

Every run is independent and seeded from (benchmark seed, strategy name, repetition) alone, so a
comparison gives the same numbers whatever ``jobs`` is and however runs are split between workers,
and adding a strategy does not change the others' runs. With ``paired`` the name is left out: repetition i of
every strategy has the same seed (common random numbers, for comparisons of variants run by run). Workers are
fresh processes (``spawn``: safe under a threaded dashboard) that rebuild the table once, pin numpy to one thread (two
processes on two cores must not each start a BLAS thread pool) and run chunks of repetitions. Each run,
not each chunk, is reported as it ends (workers send a word through a queue), so a slow strategy's chunk
never freezes the progress for minutes.
"""

from __future__ import annotations

import math
import os
import queue
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import numpy as np
import pandas as pd

from engine.compare.replay import BenchTable
from engine.errors import UserError
from engine.strategies import drive, make_strategy, options_of, strategy_class

Progress = Callable[[int, int, str], None]
#: Runs per task sent to a worker: large enough to amortise IPC (progress is reported per run anyway).
CHUNK = 25
#: Seconds between looks at the workers' progress queue while their chunks run.
POLL_S = 0.2
#: Seconds to wait for each progress word still in flight once every chunk is back.
TRAILING_S = 2.0


def run_seed(seed: int, strategy: str, rep: int) -> int:
    """The seed of one run, from the benchmark seed, the strategy's name and the repetition."""
    return int(np.random.SeedSequence([int(seed), zlib.crc32(strategy.encode()), int(rep)]).generate_state(1)[0])


@dataclass
class Comparison:
    """The outcome of a benchmark: its parameters and one row per run (with its best-so-far trace)."""

    params: dict[str, Any]
    runs: pd.DataFrame
    table: str = ""
    objective: str = ""
    optimum: float = math.nan
    direction: str = "minimize"
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def strategies(self) -> list[str]:
        return list(self.params["strategies"])


def _run(table: BenchTable, name: str, rep: int, budget: int, seed: int, options: Mapping[str, Any],
         paired: bool = False, stop_at: float | None = None) -> dict[str, Any]:
    run = run_seed(seed, "" if paired else name, rep)
    strategy = make_strategy(name, table.domain, budget, run, table.spec.direction, options)
    drive(strategy, table.evaluate, until=None if stop_at is None else lambda s: table.slowdown(s.best_value) <= stop_at)
    answer = strategy.answer
    trace = strategy.trace()
    with np.errstate(divide="ignore", invalid="ignore"):
        slow_trace = [table.slowdown(v) if np.isfinite(v) else math.inf for v in trace]
    return {
        "strategy": name,
        "rep": rep,
        "seed": run,
        "value": answer["value"] if answer else math.nan,
        "slowdown": table.slowdown(answer["value"] if answer else None),
        "budget_used": strategy.used,
        "best_slowdown": table.slowdown(strategy.best_value),
        "config": answer["config"] if answer else None,
        "trace": slow_trace,
    }


_WORKER: dict[str, Any] = {}


def _init_worker(payload: Mapping[str, Any], runs_done: Any) -> None:
    from threadpoolctl import threadpool_limits

    _WORKER["limits"] = threadpool_limits(1)
    _WORKER["table"] = BenchTable.from_payload(payload)
    _WORKER["runs_done"] = runs_done


def _run_chunk(name: str, reps: Sequence[int], budget: int, seed: int, options: Mapping[str, Any],
               paired: bool, stop_at: float | None) -> list[dict[str, Any]]:
    table, runs_done = _WORKER["table"], _WORKER["runs_done"]
    rows = []
    for rep in reps:
        rows.append(_run(table, name, rep, budget, seed, options, paired, stop_at))
        runs_done.put(name)
    return rows


def _said(runs_done: Any, wait_s: float, limit: int | None = None) -> list[str]:
    """The strategies of the runs the workers reported since the last look: what is queued now, or with
    ``wait_s`` up to ``limit`` words, each waited for at most that long."""
    said: list[str] = []
    while limit is None or len(said) < limit:
        try:
            said.append(runs_done.get(timeout=wait_s) if wait_s else runs_done.get_nowait())
        except queue.Empty:
            break
    return said


def check_params(strategies: Sequence[str], reps: int, budget: int, jobs: int,
                 options: Mapping[str, Mapping[str, Any]] | None,
                 budgets: Mapping[str, int] | None) -> tuple[list[str], dict[str, dict[str, Any]], dict[str, int]]:
    names = list(dict.fromkeys(strategy_class(s).name for s in strategies))  # a strategy named twice runs once
    if not names:
        raise UserError("benchmark: name at least one strategy")
    for value, what in ((reps, "--reps"), (budget, "--budget"), (jobs, "--jobs")):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise UserError(f"{what} {value!r} must be a positive integer")
    by_name = {strategy_class(k).name: dict(v) for k, v in (options or {}).items()}
    budget_by_name = {strategy_class(k).name: int(v) for k, v in (budgets or {}).items()}
    for name, opts in by_name.items():
        unknown = set(opts) - set(options_of(name))
        if unknown:
            raise UserError(f"strategy {name}: unknown option {min(unknown)!r}")
    return names, by_name, budget_by_name


def run_benchmark(
    table: BenchTable,
    strategies: Sequence[str],
    *,
    reps: int = 100,
    budget: int = 125,
    jobs: int = 1,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    budgets: Mapping[str, int] | None = None,
    progress: Progress | None = None,
    paired: bool = False,
    stop_at: float | None = None,
) -> Comparison:
    """Run ``reps`` repetitions of each strategy with ``budget`` (or its own, smaller one from
    ``budgets``) and ``options[name]``; ``progress(done, total, strategy)`` after each run. With ``paired``,
    repetition i of every strategy has the same seed. With ``stop_at``, a run ends once its best is within that
    slowdown of the optimum (a study of measurements to a target: what follows cannot change when it got there)."""
    names, options, budgets = check_params(strategies, reps, budget, jobs, options, budgets)
    if stop_at is not None and not stop_at >= 1.0:
        raise UserError(f"stop_at {stop_at!r}: a slowdown, at least 1")
    tasks = [
        (name, list(range(start, min(start + CHUNK, reps))), min(budget, budgets.get(name, budget)), seed,
         options.get(name, {}), paired, stop_at)
        for name in names
        for start in range(0, reps, CHUNK)
    ]
    total, done = reps * len(names), 0
    rows: list[dict[str, Any]] = []

    def tell(strategies: Sequence[str]) -> None:
        nonlocal done
        for name in strategies:
            done += 1
            if progress:
                progress(done, total, name)

    if jobs == 1:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            for name, chunk, b, s, o, p, stop in tasks:
                for rep in chunk:
                    rows.append(_run(table, name, rep, b, s, o, p, stop))
                    tell([name])
    else:
        context = get_context("spawn")
        runs_done = context.Queue()
        workers = min(jobs, len(tasks), os.cpu_count() or jobs)
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                 initargs=(table.to_payload(), runs_done)) as pool:
            pending = {pool.submit(_run_chunk, *task) for task in tasks}
            while pending:
                finished, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for future in finished:
                    rows += future.result()
                tell(_said(runs_done, wait_s=0.0))
            # a word may trail its chunk's result: read the rest while the workers live (one leaving with words
            # unread would wait on its queue's pipe while the pool waits on it)
            tell(_said(runs_done, wait_s=TRAILING_S, limit=total - done))
        runs_done.close()
    runs = pd.DataFrame(rows)
    runs["order"] = runs["strategy"].map({n: i for i, n in enumerate(names)})
    runs = runs.sort_values(["order", "rep"], kind="stable").drop(columns="order").reset_index(drop=True)
    params = {"strategies": names, "reps": reps, "budget": budget, "seed": seed, "jobs": jobs,
              "options": options, "budgets": budgets, **({"paired": True} if paired else {}),
              **({"stop_at": stop_at} if stop_at is not None else {})}
    return Comparison(params=params, runs=runs, table=table.source or table.spec.name, objective=table.objective,
                      optimum=table.optimum, direction=table.spec.direction)
