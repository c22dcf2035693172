"""One DiffTune experiment, pure: learn tables for a truth on the training blocks, then score every method in the
real simulator on the test blocks (difftune.md §5, §7 "Baselines Tunelab must report").

Methods, all on the same split and blocks: the fixed tables of the problem (llvm-mca's defaults through our
simulator, the simple table, DiffTune's random start), fixed predictions (llvm-mca-19 itself), DiffTune from
each start, greedy per-parameter search and Tunelab's strategies over a subset of parameters from the first
start. Greedy and the strategies get a budget of simulator calls, by default DiffTune's own: the size of the
data set its surrogate was trained on, so "better at the same budget" is a like-for-like claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates.difftune.calibration import calibrate, default_parameters
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.greedy import greedy_search
from engine.surrogates.difftune.learn import LearnConfig, block_keys, learn_table
from engine.surrogates.difftune.metrics import accuracy_table
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.search_result import ape
from engine.surrogates.difftune.simulate import simulated
from engine.surrogates.difftune.surrogate import Surrogate

KINDS = ("recovery", "cross-arch", "this-cpu")
#: Parameter-learning steps when no epoch count is given: DiffTune's one epoch was ~900 steps of 256 blocks.
TARGET_STEPS = 1000
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Problem:
    """What to learn: blocks, their truth (cycles per 100 iterations), the split (indices into ``blocks``) and
    the starts (name → table over the surrogate's resource model; the first also starts greedy and the
    strategies). ``fixed_tables`` are scored as they are; ``fixed_predictions`` are per-block cycles of other
    predictors (e.g. llvm-mca-19 itself); ``truth_table`` is set when the truth is a table (recovery)."""

    kind: str
    blocks: Sequence[Block]
    truth: np.ndarray
    train: np.ndarray
    test: np.ndarray
    starts: Mapping[str, ParamTable]
    fixed_tables: Mapping[str, ParamTable] = field(default_factory=dict)
    fixed_predictions: Mapping[str, np.ndarray] = field(default_factory=dict)
    truth_table: ParamTable | None = None
    val: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"kind: expected one of {', '.join(KINDS)}, got {brief(self.kind)}")
        if len(self.truth) != len(self.blocks):
            raise UserError(f"truth: {len(self.truth)} values for {len(self.blocks)} blocks")
        if not len(self.train) or not len(self.test):
            raise UserError(f"blocks: {len(self.train)} training and {len(self.test)} test blocks; need some of each")
        if not self.starts:
            raise UserError("starts: at least one start table is needed")


@dataclass(frozen=True)
class Settings:
    """Learning and baseline settings; ``budget`` is in block-simulations."""

    budget: int
    strategies: tuple[str, ...] = ("RS", "BO")
    learn: LearnConfig = LearnConfig()
    learn_epochs: int | None = None
    parameters: int = 4
    seed: int = 0


@dataclass(frozen=True)
class Outcome:
    """Per-block test predictions, their accuracy per method, what each method cost, learning curves, the
    learnt tables and (recovery) the per-field parameter error."""

    predictions: pd.DataFrame
    accuracy: pd.DataFrame
    costs: dict[str, int]
    curves: dict[str, pd.DataFrame]
    tables: dict[str, ParamTable]
    recovery: pd.DataFrame | None


def _pick(blocks: Sequence[Block], index: np.ndarray) -> list[Block]:
    return [blocks[int(i)] for i in index]


def recovery_error(learned: ParamTable, truth: ParamTable, keys: Sequence[str]) -> dict[str, float]:
    """Mean absolute error per field over ``keys`` (port cycles over the truth's units), and the globals'."""
    units = [u for u, _ in truth.units]
    errors: dict[str, list[float]] = {"latency": [], "uops": [], "read_advance": [], "port_cycles": []}
    for key in keys:
        a, b = learned.rows.get(key), truth.rows.get(key)
        if a is None or b is None:
            continue
        errors["latency"].append(abs(a.latency - b.latency))
        errors["uops"].append(abs(a.uops - b.uops))
        errors["read_advance"].append(float(np.mean(np.abs(np.subtract(a.read_advance, b.read_advance)))))
        pa, pb = dict(a.port_cycles), dict(b.port_cycles)
        errors["port_cycles"].append(float(np.mean([abs(pa.get(u, 0) - pb.get(u, 0)) for u in units])) if units else 0.0)
    out = {name: float(np.mean(v)) if v else float("nan") for name, v in errors.items()}
    out["dispatch_width"] = float(abs(learned.dispatch_width - truth.dispatch_width))
    out["rob_size"] = float(abs(learned.rob_size - truth.rob_size))
    return out


def _epochs(settings: Settings, n_train: int) -> int:
    if settings.learn_epochs is not None:
        return settings.learn_epochs
    per_epoch = -(-n_train // settings.learn.batch)
    return max(1, round(TARGET_STEPS / per_epoch))


def run_experiment(problem: Problem, surrogate: Surrogate, settings: Settings, progress: Progress | None = None) -> Outcome:
    """Learn, search, then score everything on the test blocks."""
    say = progress or (lambda _: None)
    train_blocks, test_blocks = _pick(problem.blocks, problem.train), _pick(problem.blocks, problem.test)
    train_truth, test_truth = problem.truth[problem.train], problem.truth[problem.test]
    tables: dict[str, ParamTable] = {}
    curves: dict[str, pd.DataFrame] = {}
    costs: dict[str, int] = {}
    config = LearnConfig(lr=settings.learn.lr, batch=settings.learn.batch,
                         epochs=_epochs(settings, len(train_blocks)), seed=settings.seed)
    val = problem.val if problem.val is not None and len(problem.val) else problem.train
    val_blocks, val_truth = _pick(problem.blocks, val), problem.truth[val]

    def validate(table: ParamTable) -> float:
        return float(np.nanmean(ape(simulated(val_blocks, table), val_truth)))

    for name, start in problem.starts.items():
        say(f"DiffTune from {name}: {config.epochs} epochs over {len(train_blocks):,} blocks, validated in the "
            f"simulator every {config.validate_every} steps on {len(val_blocks):,} blocks")
        learned = learn_table(surrogate, train_blocks, train_truth, start, config, validate)
        label = f"DiffTune ({name} start)"
        tables[label] = learned.table
        curves[label] = learned.history.merge(learned.validation.rename(columns={"mape": "val_mape"}), on="step",
                                              how="outer")
        costs[f"{label}: validation"] = len(learned.validation) * len(val_blocks)
    first_name, first = next(iter(problem.starts.items()))
    say(f"greedy search from {first_name}: {settings.budget:,} simulator calls")
    greedy = greedy_search(train_blocks, train_truth, first, settings.budget, seed=settings.seed)
    label = f"greedy ({first_name} start)"
    tables[label], curves[label], costs[label] = greedy.table, greedy.history, greedy.calls
    parameters = default_parameters(train_blocks, first, settings.parameters)
    for strategy in settings.strategies:
        say(f"{strategy} over {', '.join(parameters)}: {settings.budget:,} simulator calls")
        found = calibrate(train_blocks, train_truth, first, parameters, strategy, settings.budget, seed=settings.seed)
        label = f"{strategy} search ({first_name} start)"
        tables[label], curves[label], costs[label] = found.table, found.history, found.calls
    say(f"scoring {len(tables) + len(problem.fixed_tables) + len(problem.starts)} tables on {len(test_blocks):,} test blocks")
    scored = {**{f"{name} (start)": t for name, t in problem.starts.items()}, **problem.fixed_tables, **tables}
    frames = [_frame(test_blocks, name, simulated(test_blocks, table), test_truth) for name, table in scored.items()]
    frames += [_frame(test_blocks, name, np.asarray(values)[problem.test], test_truth)
               for name, values in problem.fixed_predictions.items()]
    predictions = pd.concat(frames, ignore_index=True)
    accuracy = accuracy_table(predictions, "predictor")
    recovery = None
    if problem.truth_table is not None:
        keys = block_keys(train_blocks)
        rows = [{"table": name, **recovery_error(t, problem.truth_table, keys)}
                for name, t in {**{f"{n} (start)": s for n, s in problem.starts.items()}, **tables}.items()]
        recovery = pd.DataFrame(rows)
    return Outcome(predictions, accuracy, costs, curves, tables, recovery)


def _frame(blocks: Sequence[Block], name: str, cycles: np.ndarray, truth: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"hex": [b.hex for b in blocks], "predictor": name, "cycles": cycles, "truth": truth})

