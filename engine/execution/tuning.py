"""A tuning run: a strategy asking, a study's runner measuring, every result committed as it arrives.

The runner comes from the study spec (:func:`engine.runners.runner_from_spec`) and measurements go
through :class:`engine.execution.Campaign`, so a tuning run measures exactly as a design campaign
does. Each result is handed to ``record(config, result, strategy_name, step)`` the moment it
arrives (the CLI commits it to the store; a ``record`` with a ``flush()`` commits each round of results at
once, before the strategy is told them); each decision a strategy makes (DLMT's steps) goes to
``on_decision``. Repeats of one configuration are told to the strategy as their mean.

Resume uses the campaign's own mechanism (``done``, :func:`engine.execution.campaign.stored_repeats`):
a configuration stored with all its repeats answers the strategy without measuring again, one
stored with only some of them (a run killed between two commits) gets the missing repeats, numbered
on from those stored, and is told with all of them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from engine.execution.campaign import POLL_S, Flight, Progress, as_configs, stored_repeats
from engine.execution.worker import Task
from engine.io.jsonable import plain
from engine.runners.base import MeasureResult
from engine.strategies.base import Strategy

if TYPE_CHECKING:
    from engine.analysis.decision import Decision
    from engine.study import StudySpec

#: A configuration as the values of its factors, in factor order.
Key = tuple[Any, ...]
#: A campaign's ``on_result(config, result)``.
OnResult = Callable[[dict[str, Any], MeasureResult], None]
#: ``record(config, result, strategy_name, step)``: commit one result the moment it arrives.
Record = Callable[[dict[str, Any], MeasureResult, str, int], None]


class Outcome(Protocol):
    """What :func:`tune` reads of a result, measured now (MeasureResult) or stored (StoredResult)."""

    @property
    def value(self) -> float | None: ...

    @property
    def status(self) -> str: ...


class Measures(Protocol):
    """What :func:`tune` needs of a campaign (:class:`engine.execution.campaign.Campaign`)."""

    def plan(self, configs: list[dict[str, Any]], done: Mapping[str, int] | None = None) -> tuple[list[Task], int]: ...

    def flight(self, on_result: OnResult, ahead: int | None = None) -> Flight: ...

    @property
    def cancelled(self) -> bool: ...


@dataclass(frozen=True)
class TuningResult:
    """What a run did. ``used`` counts configurations (the budget's unit); ``measurements`` the
    repeats this run measured and committed, ``reused`` the stored repeats that answered it without
    measuring, ``completed`` the configurations it found partly measured and completed."""

    best: dict[str, Any] | None
    used: int
    budget: int
    measurements: int
    reused: int
    completed: int
    decisions: int
    finished: bool
    waiting: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_config": self.best["config"] if self.best else None,
            "best_value": self.best["value"] if self.best else None,
            "budget_used": self.used,
            "budget": self.budget,
            "measurements": self.measurements,
            "measurements_reused": self.reused,
            "configurations_completed": self.completed,
            "decisions": self.decisions,
            "finished": self.finished,
            "waiting_for_decision": self.waiting,
        }


def tune(
    strategy: Strategy,
    campaign: Measures,
    record: Record | None = None,
    on_decision: Callable[[Decision, int], None] | None = None,
    *,
    stored: pd.DataFrame | None = None,
    review: Callable[[Decision, int], Decision | None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> TuningResult:
    """Run ``strategy`` to its end (or to a decision it waits for) with ``campaign``'s runner.

    ``stored`` is the study's measurements (``Store.measurements``): what they hold answers the
    strategy, and only the missing repeats are measured (a replayed run retraces its steps for free,
    a killed one completes the configuration it was committing). ``review(proposal, step)`` answers
    a strategy that waits for a person: the taken decision, or None to stop here
    (engine.execution.review keeps those in the decisions log).

    The campaign's executor is kept full: whenever it has room, the strategy is asked for that many
    configurations (a design's runs, or picks made while others are pending: ``Strategy.parallel`` follows the
    executor's slots, which a cluster's joining workers widen), and each result is told the moment it arrives.
    A cancelled campaign (``Campaign.cancel``, from another thread) asks for nothing more: what is measuring
    finishes and is told, and the run ends there, as resumable as a killed one. ``on_progress`` gets a
    :class:`Progress` after each configuration is told: ``total`` is the budget, ``completed`` the configurations
    used, ``skipped`` those answered from the store, ``results`` the repeats measured now."""
    names = strategy.domain.names
    answers = _stored_results(stored, names)
    done = stored_repeats(strategy.domain.space, stored) if stored is not None else {}
    fresh: dict[Key, list[Outcome]] = {}
    flight = campaign.flight(_Collector(fresh, names, strategy, record), ahead=1)  # more would be more pending picks
    counts = {"measurements": 0, "reused": 0, "completed": 0, "logged": 0}
    progress = Progress(total=strategy.budget, workers=flight.slots)
    started = time.perf_counter()

    def tell(key: Key, config: dict[str, Any]) -> None:
        nonlocal progress
        got = list(answers.get(key, []))
        new = fresh.pop(key, [])
        counts["measurements"] += len(new)
        counts["reused"] += len(got)
        counts["completed"] += bool(got and new)
        value, status = _summary(got + new)
        strategy.tell([config], [value], [status])
        if on_progress is not None:
            good = sum(r.status == "ok" for r in new)
            progress = replace(progress, completed=strategy.used, skipped=progress.skipped + (not new),
                               results=progress.results + len(new), ok=progress.ok + good,
                               not_ok=progress.not_ok + len(new) - good, elapsed_s=time.perf_counter() - started,
                               cancelled=campaign.cancelled, last_config=config, workers=flight.slots)
            on_progress(progress)
        decisions = getattr(strategy, "decisions", [])
        for decision in decisions[counts["logged"]:]:
            if on_decision is not None:
                on_decision(decision, int(decision.evidence.get("step") or strategy.step))
        counts["logged"] = len(decisions)

    try:
        while True:
            strategy.parallel = flight.slots
            stopped = campaign.cancelled
            asked = strategy.ask(flight.room) if flight.room > 0 and not strategy.finished and not stopped else None
            if (asked is None or asked.empty) and not flight.busy:
                if stopped:
                    break
                proposal = strategy.pending_decision
                answer = review(proposal, strategy.step) if proposal is not None and review is not None else None
                if answer is None:
                    break
                strategy.resolve(answer)
                continue
            for config in as_configs(asked if asked is not None else [], names):
                tasks, _ = campaign.plan([config], done)
                key = tuple(config[n] for n in names)
                if tasks:
                    flight.submit(tasks[0])
                else:
                    tell(key, config)
            for task, _ in flight.wait(POLL_S):
                tell(tuple(task.config[n] for n in names), task.config)
    finally:
        flight.close()
    return TuningResult(strategy.best, strategy.used, strategy.budget, counts["measurements"], counts["reused"],
                        counts["completed"], counts["logged"], strategy.finished, strategy.pending_decision is not None)


def _summary(results: list[Outcome]) -> tuple[float | None, str]:
    """Repeats of one configuration as the strategy is told them: the mean of the ok ones, else the last status."""
    ok = [r.value for r in results if r.status == "ok" and r.value is not None and math.isfinite(r.value)]
    if ok:
        return float(np.mean(ok)), "ok"
    return None, results[-1].status if results else "failed"


class _Collector:
    """Campaign callback: hand each result to ``record`` (which commits it, a round at a time when ``record`` has a
    ``flush``) and keep it for the strategy's tell, which comes after the round is committed."""

    def __init__(self, results: dict[Key, list[Outcome]], names: list[str], strategy: Strategy,
                 record: Record | None) -> None:
        self.results, self.names, self.strategy, self.record = results, names, strategy, record
        self.flush: Callable[[], None] | None = getattr(record, "flush", None)

    def __call__(self, config: dict[str, Any], result: MeasureResult) -> None:
        if self.record is not None:
            self.record(config, result, self.strategy.name, self.strategy.step)
        self.results.setdefault(tuple(config[n] for n in self.names), []).append(result)


@dataclass(frozen=True)
class StoredResult:
    """One stored repeat, as a tuning run reads it back."""

    value: float | None
    status: str


def _stored_results(measurements: pd.DataFrame | None, names: list[str]) -> dict[Key, list[StoredResult]]:
    """A study's stored repeats (``Store.measurements``) by configuration, keyed as :func:`tune` asks."""
    out: dict[Key, list[StoredResult]] = {}
    if measurements is None or measurements.empty:
        return out
    for row in measurements[[*names, "value", "status"]].itertuples(index=False):
        value = None if pd.isna(row[-2]) else float(row[-2])
        out.setdefault(tuple(plain(v) for v in row[:-2]), []).append(StoredResult(value, str(row[-1])))
    return out


def candidates_for(spec: StudySpec, table: pd.DataFrame | None) -> pd.DataFrame | None:
    """A study's known-valid candidates: its table's rows (table studies), else None (the domain
    enumerates the space when it can)."""
    if table is None:
        return None
    return table[spec.space.names]
