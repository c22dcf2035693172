"""DiffTune's three experiments (the DiffTune II issue) as use cases: build the truth, learn with a stored
surrogate, score every baseline on the test blocks and keep it all in the store.

* ``recovery``: truth = the simulator with the data set's default table (its arch's llvm-mca-19 defaults);
  DiffTune starts from a random table; the learnt table's per-field error against the truth is reported.
* ``cross-arch``: truth = llvm-mca-19's cycles for another arch (the anchor CSV, Skylake by default); starts
  from the data set's defaults (Haswell's) and a random table.
* ``this-cpu``: truth = measured cycles (each block's robust value over its passes) of one CPU, from the store or
  a ``tunelab blocks export`` CSV; llvm-mca-19 with that CPU's ``-mcpu`` is run for real as the baseline to beat.

Blocks are the surrogate's data set's blocks that have a truth, split 80/10/10 exactly as the surrogate was
(its split seed over the data set's block list), so no test block was seen in training.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.study import check_study_name
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.calibration import calibration_table, default_parameters, start_configuration
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.experiment import KINDS, Outcome, Problem, Progress, Settings, run_experiment
from engine.surrogates.difftune.learn import LearnConfig, random_start
from engine.surrogates.difftune.llvm_mca import total_cycles
from engine.surrogates.difftune.params import ParamTable, from_document, simple_table
from engine.surrogates.difftune.simulate import simulated
from engine.surrogates.difftune.train import split_blocks
from storage import Store
from storage.difftune import reserve_evaluation_id, save_evaluation, save_param_table
from storage.difftune.datasets import dataset
from storage.difftune.experiments import experiments, save_experiment
from workflows.difftune import measured_source, table_cache
from workflows.difftune.dataset import stored_job
from workflows.difftune.surrogate import stored_surrogate, surrogate_record

#: Points kept per learning curve in the stored summary (the page draws them).
CURVE_POINTS = 400


@dataclass(frozen=True)
class ExperimentRun:
    """A stored experiment: its id, the evaluation holding its predictions, and what the page and CLI show."""

    id: int
    kind: str
    evaluation_id: int
    truth: str
    blocks: dict[str, int]
    accuracy: pd.DataFrame
    recovery: pd.DataFrame | None
    costs: dict[str, int]
    tables: dict[str, str]
    seconds: float


def _problem(store: Store, kind: str, blocks: list[Block], model: ParamTable, split_seed: int, *, arch: str | None,
             measured: str | None, seed: int) -> tuple[Problem, str, str | None]:
    """The problem of one kind, its truth's label and (this-cpu) the CPU id."""
    random = random_start(blocks, model, seed)
    fixed: dict[str, ParamTable] = {"simple table": simple_table({i.key for b in blocks for i in b.instructions})}
    predictions: dict[str, np.ndarray] = {}
    cpu_id = None
    if kind == "recovery":
        truth = dict(zip((b.hex for b in blocks), simulated(blocks, model)))
        label = f"simulator with {model.provenance.get('mcpu', 'the data set')}'s defaults"
        starts = {"random": random}
    else:
        if kind == "cross-arch":
            arch = arch or "skylake"
            column = f"{arch}_mca19"
            sample = bhive.anchor()
            if column not in sample.columns:
                raise UserError(f"arch: the anchor CSV has no llvm-mca-19 column for {brief(arch)}")
            truth = dict(zip(sample["hex"], sample[column].astype(float)))
            label = f"llvm-mca-19 -mcpu={arch}"
            own = f"{model.provenance.get('mcpu', 'data set')}_mca19"
            if own in sample.columns:
                by_hex = dict(zip(sample["hex"], sample[own].astype(float)))
                predictions[f"llvm-mca-19 -mcpu={model.provenance.get('mcpu')}"] = np.array(
                    [by_hex.get(b.hex, np.nan) for b in blocks])
        else:
            cpu_id, arch, truth = measured_source(store, measured, arch)
            label = f"measured on {cpu_id}"
        fixed[f"{arch} defaults (simulator)"] = default_table(blocks, arch, table_cache())
        # The simple table, over the data set's resource model, as a start too: on measured truth it is the better
        # fixed table (issue 33: 24.0% MAPE against llvm-mca's defaults' 32.7% on Zen 3).
        starts = {"defaults": model, "simple": simple_table({i.key for b in blocks for i in b.instructions}, model),
                  "random": random}
    keep = np.array([b.hex in truth for b in blocks])
    if keep.sum() < 10:
        raise UserError(f"blocks: only {int(keep.sum())} of the data set's blocks have a truth ({label})")
    train, val, test = split_blocks(len(blocks), split_seed)
    train, val, test = train[keep[train]], val[keep[val]], test[keep[test]]
    values = np.array([truth.get(b.hex, np.nan) for b in blocks], dtype=float)
    if kind == "this-cpu":
        assert arch is not None
        mca = np.full(len(blocks), np.nan)
        mca[test] = total_cycles([blocks[i] for i in test], arch)
        predictions[f"llvm-mca-19 -mcpu={arch}"] = mca
    problem = Problem(kind, blocks, values, train, test, starts, fixed_tables=fixed, fixed_predictions=predictions,
                      truth_table=model if kind == "recovery" else None, val=val)
    return problem, label, cpu_id


@dataclass(frozen=True)
class CalibrationStudy:
    """A stored calibration grid: the table study Compare replays strategies on."""

    name: str
    parameters: list[str]
    configurations: int
    blocks: int
    best_mape: float
    start_mape: float
    truth: str


def calibration_study(store: Store, kind: str, surrogate_name: str, *, name: str, parameters: list[str] | None = None,
                      start: str | None = None, arch: str | None = None, measured: str | None = None,
                      blocks: int = 500, seed: int = 0) -> CalibrationStudy:
    """The calibration of an experiment's problem (same truth, same training blocks, the first ``blocks`` of
    them) over a few parameters, evaluated on its whole grid and stored as a table study: Tunelab's
    strategies calibrating the simulator, replayed side by side on the Compare page."""
    if kind not in KINDS:
        raise UserError(f"kind: expected one of {', '.join(KINDS)}, got {brief(kind)}")
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 10:
        raise UserError(f"blocks: must be an integer >= 10, got {brief(blocks)}")
    if check_study_name(name) in store.study_names():
        raise UserError(f"name: study {brief(name)} already exists; pick another name or delete it first")
    row, data = _surrogate_and_data(store, surrogate_name)
    model = from_document(data["model"])
    problem, label, _ = _problem(store, kind, list(stored_job(store, data).blocks), model,
                                 int(row["config"].get("split_seed", 0)), arch=arch, measured=measured, seed=seed)
    start = start or next(iter(problem.starts))
    if start not in problem.starts:
        raise UserError(f"start: {brief(start)} is not a start of the {kind} experiment "
                        f"({', '.join(problem.starts)})")
    table = problem.starts[start]
    chosen = problem.train[:blocks]
    train = [problem.blocks[int(i)] for i in chosen]
    names = list(parameters) if parameters else default_parameters(train, table, k=1)
    spec, grid = calibration_table(train, problem.truth[chosen], table, names, name=name)
    spec = replace(spec, description=f"{spec.description}; truth {label}; start: {start} table")
    store.create_study(spec, grid)
    origin = start_configuration(table, names)
    at_start = (grid[list(origin)] == pd.Series(origin)).all(axis=1)
    return CalibrationStudy(name, names, len(grid), len(train), float(grid["value"].min()),
                            float(grid.loc[at_start, "value"].iloc[0]), label)


def _curve(frame: pd.DataFrame) -> list[dict[str, Any]]:
    step = max(1, len(frame) // CURVE_POINTS)
    return frame.iloc[::step].to_dict("records")


def _surrogate_and_data(store: Store, surrogate_name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A surrogate's row and its data set's."""
    row = surrogate_record(store, surrogate_name)
    data = dataset(store, row["dataset"])
    if data is None:
        raise UserError(f"surrogate: its data set {brief(row['dataset'])} is no longer in this database")
    return row, data


def run(store: Store, kind: str, surrogate_name: str, *, arch: str | None = None, measured: str | None = None,
        budget: int | None = None, strategies: tuple[str, ...] = ("RS", "BO"), learn_epochs: int | None = None,
        lr: float = 0.05, seed: int = 0, progress: Progress | None = None) -> ExperimentRun:
    """Run one experiment with a trained surrogate and store it: each method's table as soon as it is found (a run
    stopped later keeps it), then the predictions and the summary. ``budget`` counts simulator calls (default:
    the data set's size). Every argument is checked before anything is learnt."""
    started = time.monotonic()
    if kind not in KINDS:
        raise UserError(f"kind: expected one of {', '.join(KINDS)}, got {brief(kind)}")
    row, data = _surrogate_and_data(store, surrogate_name)
    settings = Settings(budget=int(data["samples_done"]) if budget is None else budget, strategies=tuple(strategies),
                        learn=LearnConfig(lr=lr, seed=seed), learn_epochs=learn_epochs, seed=seed)
    model = from_document(data["model"])
    problem, label, cpu_id = _problem(store, kind, list(stored_job(store, data).blocks), model,
                                      int(row["config"].get("split_seed", 0)), arch=arch, measured=measured, seed=seed)
    surrogate = stored_surrogate(store, row)
    reserved: list[int] = []  # the evaluation's id, taken when the first table is stored: a refused run leaves no gap
    names: dict[str, str] = {}
    say = progress or (lambda _: None)

    def keep(method: str, table: ParamTable) -> None:
        reserved[:] = reserved or [reserve_evaluation_id(store)]
        slug = method.lower().replace(" ", "-").replace("(", "").replace(")", "")
        names[method] = f"experiment-{reserved[0]}-{slug}"
        save_param_table(store, names[method], str(data["arch"]), table.to_document(),
                         {**table.provenance, "experiment": kind, "method": method, "evaluation": str(reserved[0])})
        say(f"stored table {names[method]}")

    outcome = run_experiment(problem, surrogate, settings, progress, on_table=keep)
    return _store(store, kind, surrogate_name, data, problem, outcome, settings, label, cpu_id, reserved[0], names,
                  started)


def _store(store: Store, kind: str, surrogate_name: str, data: dict[str, Any], problem: Problem, outcome: Outcome,
           settings: Settings, label: str, cpu_id: str | None, evaluation_id: int, names: dict[str, str],
           started: float) -> ExperimentRun:
    """The predictions (under the reserved evaluation id) and the summary, naming the tables already stored."""
    blocks = {"train": len(problem.train), "test": len(problem.test), "data_set": len(problem.blocks)}
    costs = {"DiffTune (data set)": int(data["samples_done"]), **outcome.costs}
    arch = str(data["arch"])
    save_evaluation(store, arch=arch, truth=f"experiment {kind}", cpu_id=cpu_id,
                    summary={"truth": label, "accuracy": outcome.accuracy.to_dict("records")},
                    predictions=outcome.predictions, evaluation_id=evaluation_id)
    summary = {"truth": label, "arch": arch, "cpu_id": cpu_id, "blocks": blocks, "costs": costs, "tables": names,
               "settings": {"budget": settings.budget, "strategies": list(settings.strategies), "lr": settings.learn.lr,
                            "learn_epochs": settings.learn_epochs, "seed": settings.seed, "dataset": data["name"]},
               "accuracy": outcome.accuracy.to_dict("records"),
               "recovery": None if outcome.recovery is None else outcome.recovery.to_dict("records"),
               "curves": {name: _curve(frame) for name, frame in outcome.curves.items()}}
    experiment_id = save_experiment(store, kind=kind, surrogate_name=surrogate_name, evaluation_id=evaluation_id,
                                    summary=summary)
    return ExperimentRun(experiment_id, kind, evaluation_id, label, blocks, outcome.accuracy, outcome.recovery, costs,
                         names, time.monotonic() - started)


def stored_experiments(store: Store) -> pd.DataFrame:
    """Experiments, newest first (``summary`` parsed)."""
    return experiments(store)
