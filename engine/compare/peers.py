"""A saved peer run (``bench/peers.py --out``) as a comparison of one table: Kernel Tuner's strategies, Optuna and
Tunelab's own, replayed elsewhere with one accounting, shown beside the strategies Compare runs here.

Each row of the file is one run on one space: ``space`` (the cache's name), ``method`` ("KT pso", "Optuna TPE",
"Tunelab AUTO"), ``rep``, ``trace`` (best-so-far slowdown after each charged measurement) and, for Tunelab's runs,
the ``budget`` it ran with. The peers ran once at the largest budget; a smaller budget reads their trace's prefix.
:func:`beside` adds them to a comparison run here, at that comparison's budget, once their slowdowns show they are
runs of its table.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.compare.replay import BenchTable
from engine.compare.run import Comparison
from engine.errors import UserError, brief
from engine.io.table_import import listing, load_json, read_bytes, source_name

SOURCE = "bench/peers.py"
#: Largest rep, budget or count a run may hold: what the store's integer columns hold.
_MAX_INT = 2**31 - 1
#: Largest integer a trace may hold: float() overflows past it.
_MAX_FLOAT = int(sys.float_info.max)
#: How far a peer's slowdown may be from one of the table's and still be that configuration's (the file holds
#: the ratios at full precision; this allows a file written rounded to 6 digits, as the store keeps traces).
_SAME_SLOWDOWN = 1e-5


def read_peer_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a peer run file, every field checked (one line naming the file, the run and the field).

    At most :data:`~engine.io.table_import.MAX_IMPORT_BYTES` are read or inflated (a full run on the five caches,
    30 repetitions, every method and budget, is under 20 MB), JSON nested past ``MAX_DEPTH`` is refused (a run
    needs 3), and the traces come back as floats."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"peer run {path}: no such file")
    what = f"peer run {source_name(path)}"
    try:
        text = read_bytes(path, what).decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{what}: not UTF-8 text (byte {error.start})") from None
    try:
        rows = load_json(text, what)
    except json.JSONDecodeError as error:
        raise UserError(f"{what}: not JSON ({error})") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UserError(f"{what}: expected a list of runs, as bench/peers.py --out writes")
    if not rows:
        raise UserError(f"{what}: holds no runs")
    for i, row in enumerate(rows):
        _check_run(row, f"{what}: run {i}")
    return rows


def _check_run(row: dict[str, Any], what: str) -> None:
    """One run's fields, typed and in range; its trace becomes floats."""
    missing = [k for k in ("space", "method", "rep", "trace") if k not in row]
    if missing:
        raise UserError(f"{what} has no '{missing[0]}'")
    for key in ("space", "method"):
        if not isinstance(row[key], str) or not row[key]:
            raise UserError(f"{what}: {key!r} is {brief(row[key])}, expected a name")
    what = f"{what} ({listing([row['method']])} on {listing([row['space']])})"
    for key, low in (("rep", 0), ("budget", 1), ("used", 0)):
        if key in row and not (type(row[key]) is int and low <= row[key] <= _MAX_INT):
            raise UserError(f"{what}: {key!r} is {brief(row[key])}, expected an integer {low}..{_MAX_INT}")
    trace = row["trace"]
    if not isinstance(trace, list):
        raise UserError(f"{what}: 'trace' is {brief(trace)}, expected a list of slowdowns")
    for j, value in enumerate(trace):
        number = type(value) is float or (type(value) is int and value <= _MAX_FLOAT)  # no bool, no int past float
        if not number or not value >= 1:  # NaN fails >= too
            raise UserError(f"{what}: trace[{j}] is {brief(value)}: a slowdown is ≥ 1 (best measured ÷ the best), "
                            "or Infinity while nothing has worked")
    row["trace"] = [float(value) for value in trace]


def at_budget(row: Mapping[str, Any], budget: int) -> tuple[list[float], float, int]:
    """A run cut at ``budget``: its trace, its best slowdown (inf when nothing was measured) and the measurements
    charged (a Tunelab run's own count; a peer's trace length)."""
    trace = [float(v) for v in row["trace"][:budget]]
    return trace, (trace[-1] if trace else math.inf), int(row.get("used", len(trace)))


def peer_comparison(rows: Sequence[Mapping[str, Any]], space: str, budget: int, optimum: float) -> Comparison:
    """The runs of ``space`` at ``budget`` as a :class:`Comparison` (value = best measured, ``optimum`` × its
    slowdown)."""
    spaces = sorted({str(r["space"]) for r in rows})
    if space not in spaces:
        raise UserError(f"peer run: no runs on space {space!r} (it has {listing(spaces) or 'none'})")
    chosen = [r for r in rows if r["space"] == space and int(r.get("budget", budget)) == budget]
    if not chosen:
        budgets = sorted({int(r["budget"]) for r in rows if r["space"] == space and "budget" in r})
        raise UserError(f"peer run: no runs on {space!r} at budget {budget} (Tunelab's ran at {budgets})")
    records = []
    for row in chosen:
        trace, best, used = at_budget(row, budget)
        records.append({"strategy": str(row["method"]), "rep": int(row["rep"]), "seed": 0,
                        "value": best * optimum if math.isfinite(best) else math.nan, "slowdown": best,
                        "best_slowdown": best, "budget_used": used, "config": None, "trace": trace})
    runs = pd.DataFrame(records)
    methods = list(dict.fromkeys(runs["strategy"]))
    params = {"strategies": methods, "reps": int(runs.groupby("strategy").size().max()), "budget": budget, "seed": 0,
              "jobs": 1, "options": {}, "budgets": {}, "source": SOURCE, "space": space}
    return Comparison(params=params, runs=runs, table=space, optimum=optimum)


def beside(ours: Comparison, rows: Sequence[Mapping[str, Any]], space: str, table: BenchTable, file: str) -> Comparison:
    """``ours`` (a comparison run on ``table``) with the peer runs on ``space`` (read from ``file``) beside its
    strategies, cut at its budget: one comparison, one accounting. Refused in one line: runs whose slowdowns are not the table's (another
    kernel or device under that name), runs that all stop before the budget (they ran with a smaller one), and
    methods already in ``ours``."""
    budget = int(ours.params["budget"])
    peers = peer_comparison(rows, space, budget, table.optimum)
    present = [m for m in peers.strategies if m in ours.strategies]
    if present:
        raise UserError(f"peer run: {listing(present)} {'is' if len(present) == 1 else 'are'} already in this comparison")
    _check_table(peers, space, table)
    longest = int(peers.runs["trace"].map(len).max())
    if longest < min(budget, len(table.table)):
        raise UserError(f"peer run: its runs on {listing([space])} stop at {longest} measurements, before this "
                        f"comparison's budget {budget} (run bench/peers.py with a budget of at least {budget})")
    params = {**ours.params, "strategies": [*ours.strategies, *peers.strategies],
              "peers": {"source": SOURCE, "file": file, "space": space, "strategies": peers.strategies}}
    return Comparison(params=params, runs=pd.concat([ours.runs, peers.runs], ignore_index=True),
                      table=ours.table, objective=table.objective, optimum=table.optimum, direction=table.spec.direction)


def _check_table(peers: Comparison, space: str, table: BenchTable) -> None:
    """Every slowdown a peer trace holds is some configuration's of ``table`` (its value over the optimum), or
    the runs were made on another table: their slowdowns would read as this one's."""
    ok = table.table["status"].to_numpy() == "ok"
    known = np.unique([table.slowdown(v) for v in table.table["value"].to_numpy(dtype=float)[ok]])
    for run in peers.runs.itertuples():
        trace = np.asarray(run.trace, dtype=float)
        trace = trace[np.isfinite(trace)]
        at = np.searchsorted(known, trace)
        below, above = known[np.maximum(at - 1, 0)], known[np.minimum(at, len(known) - 1)]
        nearest = np.minimum(np.abs(below - trace), np.abs(above - trace))
        foreign = np.flatnonzero(nearest > _SAME_SLOWDOWN * trace)
        if len(foreign):
            raise UserError(f"peer run: its runs on {listing([space])} are not of table study "
                            f"{listing([table.source or table.spec.name])}: {listing([run.strategy])}'s run {run.rep} "
                            f"reached a slowdown of {trace[foreign[0]]:.6g}, which no configuration of the table has")
