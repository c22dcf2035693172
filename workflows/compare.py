"""Strategy comparisons: replay strategies on an exhaustive table and keep the result in the store.

``tunelab bench`` and the Compare page both come here, so both apply the same preset (the paper's
per-strategy settings by default) and store the same record.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from engine.compare.peers import beside, read_peer_rows
from engine.compare.presets import preset
from engine.compare.replay import BenchTable, load_table
from engine.compare.run import Comparison, Progress, run_benchmark
from engine.compare.summary import summary_records, summary_table
from engine.errors import UserError
from engine.io.table_import import listing, source_name
from storage import Store
from storage.comparisons import list_comparisons, load_comparison, save_comparison
from storage.costmodel import models

#: What Compare proposes: the paper's strategies and Tunelab's default, AUTO.
DEFAULT_STRATEGIES = ["RS", "LHS", "GS", "GSR", "GA", "LM", "DLMT", "AUTO"]


def table_study(store: Store, name: str) -> BenchTable:
    """The table of a stored table study, as a replayable objective."""
    study = store.get_study(name)
    if study.spec.runner.get("kind") != "table":
        raise UserError(f"study '{name}' is not a table study (runner {study.spec.runner.get('kind')!r})")
    return BenchTable(study.spec, store.study_table(name), name)


def suggested_options(store: Store, name: str) -> dict[str, dict[str, Any]]:
    """Options a form pre-fills for this table study: PF's graph when the study was made from a graph file
    (``tunelab costmodel study``) and its model, the cost model trained last on that task."""
    graph = store.get_study(name).spec.runner.get("graph")
    if not graph:
        return {}
    trained = models(store)
    trained = trained[trained["task"] == "tile"] if not trained.empty else trained
    if trained.empty:
        return {"PF": {"graph": graph}}
    from workflows.costmodel import model_file

    return {"PF": {"graph": graph, "model": str(model_file(store, str(trained["name"].iloc[-1])))}}


def table_from(source: str, objective: str | None, store: Store | None) -> tuple[BenchTable, str | None]:
    """A CSV or Kernel Tuner cache file, or else the name of a stored table study (then its name)."""
    if Path(source).is_file():
        return load_table(source, objective), None
    if store is None:
        raise UserError(f"table {source!r}: not a file, and no database to find a study of that name in")
    return table_study(store, source), source


def comparison_name(table: str, strategies: Sequence[str]) -> str:
    """The name of a comparison the person did not name: its table and the strategies that ran (not those a form
    offered before the run, nor the table chosen before)."""
    return f"{table}: {', '.join(strategies)}"


@dataclass(frozen=True)
class Compared:
    """A finished comparison, its summary table and (when stored) its id."""

    comparison: Comparison
    summary: pd.DataFrame
    seconds: float
    stored_id: int | None


def compare(table: BenchTable, strategies: Sequence[str], *, reps: int, budget: int, jobs: int, seed: int,
            preset_name: str = "paper", options: Mapping[str, Mapping[str, Any]] | None = None,
            progress: Progress | None = None, store: Store | None = None, name: str | None = None,
            study: str | None = None) -> Compared:
    """Run the comparison with a preset (its options and budgets, then ``options`` over it); store it
    when a store is given."""
    preset_options, budgets = preset(preset_name, table.space)
    for strategy, opts in (options or {}).items():
        preset_options.setdefault(strategy.upper(), {}).update(opts)
    started = time.perf_counter()
    comparison = run_benchmark(table, strategies, reps=reps, budget=budget, jobs=jobs, seed=seed,
                               options=preset_options, budgets=budgets, progress=progress)
    seconds = time.perf_counter() - started
    summary = summary_table(comparison)
    stored_id = None
    if store is not None:
        label = (name or "").strip() or comparison_name(study or table.source or table.spec.name, comparison.strategies)
        params = {**comparison.params, "table": table.source, "objective": table.objective, "optimum": table.optimum,
                  "preset": preset_name}
        stored_id = save_comparison(store, name=label, study=study or table.source, params=params,
                                    summary=summary_records(summary), runs=comparison.runs)
    return Compared(comparison, summary, seconds, stored_id)


def saved_comparisons(store: Store, study: str) -> pd.DataFrame:
    return list_comparisons(store, study=study)


def open_comparison(store: Store, comparison_id: int) -> tuple[dict[str, Any], Comparison]:
    """A stored comparison's record and the comparison rebuilt from it."""
    record = load_comparison(store, comparison_id)
    return record, Comparison(params=record["params"], runs=record["runs"])


def peer_space(store: Store, study: str) -> str:
    """The name a peer run gives the space of table study ``study``: bench/peers.py names a space after its Kernel
    Tuner cache file, so a study imported from a cache answers to that file's name whatever it is called; any
    other study to its own name."""
    runner = store.get_study(study).spec.runner
    source = str(runner.get("source") or "")
    if runner.get("format") == "kernel_tuner" and source:
        return source.removesuffix(".gz").removesuffix(".json")
    return study


def add_peer_run(store: Store, comparison_id: int, path: str | Path, *, space: str) -> int:
    """Store comparison ``comparison_id`` with the runs on ``space`` of a ``bench/peers.py --out`` file beside its
    strategies, at its budget, as a new comparison (the one run stays as it ran); returns the new one's id."""
    record, ours = open_comparison(store, comparison_id)
    table = table_study(store, record["study"])
    joined = beside(ours, read_peer_rows(path), space, table, source_name(path))
    name = f"{record['name']} + {listing(joined.params['peers']['strategies'], shown=3)} ({source_name(path)})"
    return save_comparison(store, name=name, study=record["study"], params=joined.params,
                           summary=summary_records(summary_table(joined)), runs=joined.runs)
