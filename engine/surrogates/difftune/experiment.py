"""One DiffTune experiment, pure: learn tables for a truth on the training blocks, then score every method in the
real simulator on the test blocks (difftune.md §5, §7 "Baselines Tunelab must report").

Methods, all on the same split and blocks: the fixed tables of the problem (llvm-mca's defaults through our
simulator, the simple table, DiffTune's random start), fixed predictions (llvm-mca-19 itself), DiffTune from
each start and from greedy search's table, greedy per-parameter search and Tunelab's strategies over a subset
of parameters from the first start. Greedy and the strategies get a budget of simulator calls (one block
simulated under one table), by default DiffTune's own: the size of the data set its surrogate was trained on, so
"better at the same budget" is a like-for-like claim.

Settings are checked before anything is learnt: a budget greedy search or a strategy cannot use is refused
then, not after the learning stages. Each table is handed to ``on_table`` as soon as its method ends, so a
caller keeps it whatever stops the run later.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.strategies.registry import make_strategy, strategy_class
from engine.surrogates.difftune.calibration import calibrate, calibration_space, default_parameters
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
#: Seeds stop below this: numpy's ``RandomState`` draws the random start and the learning's batches.
MAX_SEED = 2**32
Progress = Callable[[str], None]
#: Receives each method's table (its label, the table) as soon as the method ends.
OnTable = Callable[[str, ParamTable], None]
#: Seconds between two progress lines of one long step (learning, a search): often enough to see it move.
PROGRESS_EVERY_S = 10.0


def every(say: Progress, seconds: float = PROGRESS_EVERY_S) -> Progress:
    """``say``, passing on at most one line per ``seconds`` (the first at once): a step reports as often as it
    likes, a person reads a line now and then."""
    last = -math.inf

    def throttled(text: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= seconds:
            last = now
            say(text)

    return throttled


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
    """Learning and baseline settings; ``budget`` is in simulator calls (one block simulated under one table)."""

    budget: int
    strategies: tuple[str, ...] = ("RS", "BO")
    learn: LearnConfig = LearnConfig()
    learn_epochs: int | None = None
    parameters: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        """Refuse what only a later stage would trip over, before the problem is even built."""
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1:
            raise UserError(f"budget: must be a positive whole number of simulator calls, got {brief(self.budget)}")
        for name, low in (("learn_epochs", 1), ("parameters", 0)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise UserError(f"{name}: must be an integer ≥ {low}, got {brief(value)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < MAX_SEED:
            raise UserError(f"seed: must be an integer from 0 to {MAX_SEED - 1:,}, got {brief(self.seed)}")
        if isinstance(self.strategies, str) or not self.strategies:
            raise UserError(f"strategies: name at least one strategy, got {brief(self.strategies)}")
        for name in self.strategies:
            strategy_class(name)


def _check_budget(problem: Problem, settings: Settings) -> None:
    """Refuse a budget greedy search or a strategy cannot use, before any learning: their own checks come only
    after the learning stages, whose tables would be spent for nothing. Greedy search's first evaluation (the
    start) simulates every training block; a strategy gets ``budget // training blocks`` evaluations."""
    n = len(problem.train)
    if settings.budget < n:
        raise UserError(f"budget: {settings.budget:,} simulator calls cannot pay for one evaluation of the start on the "
                        f"{n:,} training blocks (one call per block); give at least {n:,}")
    first = next(iter(problem.starts.values()))
    space = calibration_space(first, default_parameters(_pick(problem.blocks, problem.train), first, settings.parameters))
    evaluations = settings.budget // n
    for strategy in settings.strategies:
        try:
            make_strategy(strategy, space, evaluations, seed=settings.seed)
        except UserError as error:
            raise UserError(f"budget: {settings.budget:,} simulator calls give {strategy} {evaluations:,} evaluation"
                            f"{'s' if evaluations > 1 else ''} of the {n:,} training blocks, which it refuses "
                            f"({brief(str(error), 100)})") from None


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


def run_experiment(problem: Problem, surrogate: Surrogate, settings: Settings, progress: Progress | None = None,
                   on_table: OnTable | None = None) -> Outcome:
    """Check the budget, learn, search, then score everything on the test blocks; ``on_table`` gets each method's
    table as soon as it is found."""
    _check_budget(problem, settings)
    say = progress or (lambda _: None)
    keep = on_table or (lambda _label, _table: None)
    train_blocks, test_blocks = _pick(problem.blocks, problem.train), _pick(problem.blocks, problem.test)
    train_truth, test_truth = problem.truth[problem.train], problem.truth[problem.test]
    tables: dict[str, ParamTable] = {}
    curves: dict[str, pd.DataFrame] = {}
    costs: dict[str, int] = {}
    config = LearnConfig(lr=settings.learn.lr, batch=settings.learn.batch,
                         epochs=_epochs(settings, len(train_blocks)), seed=settings.seed)
    val = problem.val if problem.val is not None and len(problem.val) else problem.train
    val_blocks, val_truth = _pick(problem.blocks, val), problem.truth[val]

    steps = config.epochs * -(-len(train_blocks) // config.batch)

    def validating(name: str) -> Callable[[ParamTable], float]:
        """The validation of one start's learning, saying where it stands (step, simulator calls, best so far)."""
        seen: list[float] = []
        tell = every(say)

        def validate(table: ParamTable) -> float:
            score = float(np.nanmean(ape(simulated(val_blocks, table), val_truth)))
            seen.append(score)
            step = min(steps, (len(seen) - 1) * config.validate_every)
            tell(f"  DiffTune from {name}: step {step:,} of {steps:,}, validation MAPE {score:.2%} (best {min(seen):.2%}), "
                 f"{len(seen) * len(val_blocks):,} simulator calls")
            return score

        return validate

    def searching(label: str) -> Callable[[int, float], None]:
        tell = every(say)
        return lambda calls, best: tell(f"  {label}: {calls:,} of {settings.budget:,} simulator calls, "
                                        f"best training MAPE {best:.2%}")

    def learn(name: str, start: ParamTable, spent: int = 0) -> None:
        """DiffTune from ``start``; ``spent``: simulator calls that made the start (greedy's), counted in its cost."""
        say(f"DiffTune from {name}: {config.epochs} epochs ({steps:,} steps) over {len(train_blocks):,} blocks, "
            f"validated in the simulator every {config.validate_every} steps on {len(val_blocks):,} blocks")
        learned = learn_table(surrogate, train_blocks, train_truth, start, config, validating(name))
        label = f"DiffTune ({name} start)"
        tables[label] = learned.table
        keep(label, learned.table)
        curves[label] = learned.history.merge(learned.validation.rename(columns={"mape": "val_mape"}), on="step",
                                              how="outer")
        costs[f"{label}: validation"] = len(learned.validation) * len(val_blocks) + spent

    for name, start in problem.starts.items():
        learn(name, start)
    first_name, first = next(iter(problem.starts.items()))
    say(f"greedy search from {first_name}: {settings.budget:,} simulator calls")
    greedy = greedy_search(train_blocks, train_truth, first, settings.budget, seed=settings.seed,
                           on_progress=searching("greedy"))
    label = f"greedy ({first_name} start)"
    tables[label], curves[label], costs[label] = greedy.table, greedy.history, greedy.calls
    keep(label, greedy.table)
    # DiffTune from greedy's table (issue 33): the surrogate's gradient where direct search stopped. It costs greedy's
    # calls and its own validation; its validation keeps the start when learning finds nothing better.
    learn("greedy", greedy.table, spent=greedy.calls)
    parameters = default_parameters(train_blocks, first, settings.parameters)
    for strategy in settings.strategies:
        say(f"{strategy} over {', '.join(parameters)}: {settings.budget:,} simulator calls")
        found = calibrate(train_blocks, train_truth, first, parameters, strategy, settings.budget, seed=settings.seed,
                          on_progress=searching(strategy))
        label = f"{strategy} search ({first_name} start)"
        tables[label], curves[label], costs[label] = found.table, found.history, found.calls
        keep(label, found.table)
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

