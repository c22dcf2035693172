"""The simulator's calibration as a tuning study: some table parameters become integer factors, and any of
Tunelab's strategies minimises the simulator's MAPE against the truth (difftune.md §7's baselines next to
DiffTune). The same grid, evaluated exhaustively, is a table study the Compare page can replay.

Parameters are named ``dispatch_width``, ``rob_size``, ``latency:KEY``, ``uops:KEY`` and ``port:KEY:RESOURCE``
(net cycles on a unit or group; 0 removes it from the row). Factor names must be identifiers, so ``:`` becomes
``__`` and any other odd character ``_`` (``latency:XOR32rr@zero`` → ``latency__XOR32rr_zero``); :func:`apply`
reads either spelling back through the start table.

Levels are §3's sampling ranges (dispatch width 1..10, ROB 50..250 in steps of 50, latency 0..5, µops 1..5 as
written to the simulator, port cycles 0..2) plus the start's value, so the start is always a configuration
and a search that measures it first can never end worse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.space.factors import Factor, Space
from engine.strategies.base import drive
from engine.strategies.registry import make_strategy
from engine.study import StudySpec
from engine.surrogates.difftune import sampling
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import BOUNDS, OpParams, ParamTable
from engine.surrogates.difftune.search_result import SearchResult, ape, check_budget, check_problem, curve
from engine.surrogates.difftune.simulate import simulate

GLOBALS = ("dispatch_width", "rob_size")
ROW_FIELDS = ("latency", "uops", "port")
#: §3's range of each field (µops at least 1, as DiffTune writes them for the simulator).
GRID: dict[str, tuple[int, ...]] = {
    "dispatch_width": tuple(range(sampling.DISPATCH_WIDTH[0], sampling.DISPATCH_WIDTH[1] + 1)),
    "rob_size": tuple(range(sampling.ROB_SIZE[0], sampling.ROB_SIZE[1] + 1, 50)),
    "latency": tuple(range(sampling.LATENCY[0], sampling.LATENCY[1] + 1)),
    "uops": tuple(range(max(sampling.UOPS[0], 1), sampling.UOPS[1] + 1)),
    "port": tuple(range(sampling.PORT_CYCLES[0], sampling.PORT_CYCLES[1] + 1)),
    "forwarding_advance": tuple(range(-sampling.LATENCY[1], sampling.LATENCY[1] + 1)),
    "stack_forwarding_advance": tuple(range(-sampling.LATENCY[1], sampling.LATENCY[1] + 1)),
}
#: Smallest value a field may take in a table the simulator runs.
FLOOR = {"dispatch_width": 1, "rob_size": 1, "latency": 0, "uops": 1, "port": 0, "forwarding_advance": -20,
         "stack_forwarding_advance": -20}
#: Largest: the parameter table's own bounds (a search past them would make a table the simulator refuses).
CEILING = {field: BOUNDS["port_cycles" if field == "port" else field][1] for field in FLOOR}
#: Largest grid :func:`calibration_table` evaluates (each point simulates every block).
MAX_GRID = 5_000
OBJECTIVE = "mape"


@dataclass(frozen=True)
class Parameter:
    """One integer of a table: a global (``key`` empty) or a row field of opcode ``key``."""

    field: str
    key: str = ""
    resource: str = ""

    @property
    def name(self) -> str:
        return ":".join(p for p in (self.field, self.key, self.resource) if p)

    @property
    def factor(self) -> str:
        return "__".join(_safe(p) for p in (self.field, self.key, self.resource) if p)


def _safe(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", text)


def _split(text: str, separator: str) -> tuple[str, str]:
    """Key and resource of a port parameter (the resource is last: keys never hold the separator)."""
    key, _, resource = text.rpartition(separator)
    return key, resource


def parameter(name: str, table: ParamTable) -> Parameter:
    """The parameter ``name`` stands for in ``table``; an unknown field, key or resource is a UserError."""
    field, _, rest = str(name).partition(":")
    if field in GLOBALS and not rest:
        return Parameter(field)
    key, resource = _split(rest, ":") if field == "port" else (rest, "")
    if field not in ROW_FIELDS or not key or key not in table.rows or (field == "port") != bool(resource):
        raise UserError(f"parameters: {brief(name)} is not one of {', '.join(GLOBALS)}, latency:KEY, uops:KEY or "
                        "port:KEY:RESOURCE with KEY a row of the start table")
    if field == "port" and resource not in table.resources:
        raise UserError(f"parameters: {brief(name)} names resource {brief(resource)}, not one of the table's")
    return Parameter(field, key, resource)


def value(table: ParamTable, p: Parameter) -> int:
    """The parameter's current value in ``table``."""
    if not p.key:
        return int(getattr(table, p.field))
    row = table.rows[p.key]
    return dict(row.port_cycles).get(p.resource, 0) if p.field == "port" else int(getattr(row, p.field))


def with_values(table: ParamTable, values: Mapping[Parameter, int]) -> ParamTable:
    """A copy of ``table`` with the parameters set (a value below its field's floor is a UserError)."""
    rows = dict(table.rows)
    changed = table
    for p, v in values.items():
        if int(v) < FLOOR[p.field]:
            raise UserError(f"{p.name}: must be ≥ {FLOOR[p.field]}, got {brief(v)}")
        if p.key:
            rows[p.key] = _row_with(rows[p.key], p, int(v))
        else:  # a global: one integer field of the table
            changed = replace(changed, **{p.field: int(v)})  # type: ignore[arg-type]
    return replace(changed, rows=rows)


def _row_with(row: OpParams, p: Parameter, v: int) -> OpParams:
    if p.field == "latency":
        return replace(row, latency=v)
    if p.field == "uops":
        return replace(row, uops=v)
    ports = {**dict(row.port_cycles), p.resource: v}
    return replace(row, port_cycles=tuple(sorted((r, c) for r, c in ports.items() if c)))


def blocks_by_key(blocks: Sequence[Block]) -> dict[str, np.ndarray]:
    """Indices of the blocks holding each opcode key, most widespread first (ties by name): the blocks a
    change to that key's row can move, and so what it costs to re-simulate."""
    holders: dict[str, list[int]] = {}
    for i, b in enumerate(blocks):
        for key in dict.fromkeys(x.key for x in b.instructions):
            holders.setdefault(key, []).append(i)
    order = sorted(holders, key=lambda k: (-len(holders[k]), k))
    return {k: np.array(holders[k], dtype=np.int64) for k in order}


def default_parameters(blocks: Sequence[Block], start: ParamTable, k: int = 4) -> list[str]:
    """The globals, then latency and µops of the ``k`` opcodes found in the most blocks."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UserError(f"k: must be a non-negative integer, got {brief(k)}")
    keys = [key for key in blocks_by_key(blocks) if key in start.rows][:k]
    return [*GLOBALS, *(f"{field}:{key}" for key in keys for field in ("latency", "uops"))]


def _parameters(start: ParamTable, names: Sequence[str]) -> list[Parameter]:
    if isinstance(names, str) or not names:
        raise UserError(f"parameters: name at least one parameter, got {brief(names)}")
    params = [parameter(n, start) for n in names]
    factors = [p.factor for p in params]
    twin = next((p for i, p in enumerate(params) if p.factor in factors[:i]), None)
    if twin is not None:
        raise UserError(f"parameters: {brief(twin.name)} is listed twice (or shares its factor name {twin.factor!r})")
    return params


def calibration_space(start: ParamTable, parameters: Sequence[str]) -> Space:
    """One integer factor per parameter, on §3's range of its field plus the start's value."""
    return Space(Factor(p.factor, "integer", tuple(sorted({*GRID[p.field], value(start, p)})))
                 for p in _parameters(start, parameters))


def start_configuration(start: ParamTable, parameters: Sequence[str]) -> dict[str, int]:
    """The configuration of a calibration space that stands for ``start`` itself."""
    return {p.factor: value(start, p) for p in _parameters(start, parameters)}


def _by_factor(start: ParamTable, name: str) -> Parameter:
    """The parameter a factor name (or a parameter name) stands for, read through the start's rows."""
    if ":" in name or name in GLOBALS:
        return parameter(name, start)
    field, _, rest = name.partition("__")
    key_part, resource_part = _split(rest, "__") if field == "port" else (rest, "")
    keys = [k for k in start.rows if _safe(k) == key_part]
    resources = [r for r in start.resources if _safe(r) == resource_part]
    if field not in ROW_FIELDS or len(keys) != 1 or (field == "port" and len(resources) != 1):
        raise UserError(f"config: {brief(name)} is not a factor of a calibration space over this table")
    return Parameter(field, keys[0], resources[0] if field == "port" else "")


def apply(start: ParamTable, config: Mapping[str, int]) -> ParamTable:
    """The table a configuration stands for: ``start`` with each factor's (or parameter's) value set."""
    return with_values(start, {_by_factor(start, str(n)): int(v) for n, v in config.items()})


class _Objective:
    """Training MAPE of level-index rows of a calibration space, counting the simulator calls spent."""

    def __init__(self, blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, parameters: Sequence[str]) -> None:
        self.blocks, self.truth, self.start = blocks, truth, start
        self.params = _parameters(start, parameters)
        self.space = calibration_space(start, parameters)
        self.levels = [np.asarray(f.levels, dtype=np.int64) for f in self.space.factors]
        self.calls = 0

    def table(self, row: np.ndarray) -> ParamTable:
        return with_values(self.start, {p: int(lv[i]) for p, lv, i in zip(self.params, self.levels, row)})

    def __call__(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = np.array([ape(simulate(self.blocks, self.table(row)), self.truth).mean() for row in index])
        self.calls += len(index) * len(self.blocks)
        return values, np.full(len(index), "ok", dtype=object)


def calibrate(blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, parameters: Sequence[str],
              strategy: str, budget: int, *, seed: int = 0,
              on_progress: Callable[[int, float], None] | None = None) -> SearchResult:
    """Minimise the training MAPE over ``parameters`` with a registry strategy (``RS``, ``BO``, ...);
    ``on_progress(calls, best MAPE)`` after each batch it asks for.

    Each measurement simulates every block, so the strategy gets ``budget // len(blocks)`` of them; the start
    is measured first and told to the strategy (its first charged measurement), so the result is never worse
    than the start and a model-based strategy has it as data."""
    values = check_problem(blocks, truth, start)
    budget = check_budget(budget, len(blocks))
    objective = _Objective(blocks, values, start, parameters)
    space = objective.space
    searcher = make_strategy(strategy, space, budget // len(blocks), seed=seed)
    origin = space.to_level_index(pd.DataFrame([start_configuration(start, parameters)]))
    searcher.tell_index(origin, *objective(origin))

    def evaluate(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found = objective(index)
        if on_progress is not None:
            on_progress(objective.calls, min(searcher.best_loss, float(np.nanmin(found[0], initial=np.inf))))
        return found

    drive(searcher, evaluate)
    best = searcher.best_index
    assert best is not None  # the start was measured, and its MAPE is finite
    trace = searcher.trace()
    calls = len(blocks) * np.arange(1, len(trace) + 1)
    return SearchResult(objective.table(best), objective.calls, curve(calls, trace))


def calibration_table(blocks: Sequence[Block], truth: np.ndarray, start: ParamTable, parameters: Sequence[str], *,
                      name: str) -> tuple[StudySpec, pd.DataFrame]:
    """Every configuration of the calibration space and its MAPE, as a table study (factor columns, ``value``,
    ``status``, ``error``; objective ``mape``, minimised): what the Compare page replays strategies on."""
    objective = _Objective(blocks, check_problem(blocks, truth, start), start, parameters)
    space = objective.space
    if space.size > MAX_GRID:
        raise UserError(f"parameters: their grid has {space.size:,} configurations, more than {MAX_GRID:,}; "
                        "choose fewer parameters")
    spec = StudySpec(name=name, space=space, objective=OBJECTIVE, direction="minimize",
                     runner={"kind": "table", "source": "difftune calibration"},
                     description=f"Simulator MAPE on {len(blocks):,} blocks over {', '.join(parameters)}")
    grid = space.enumerate().reset_index(drop=True)
    mape, status = objective(space.to_level_index(grid))
    table = grid.assign(value=mape, status=status.astype(str), error=pd.Series([None] * len(grid), dtype=object))
    return spec, table
