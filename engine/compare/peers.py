"""A saved peer run (``bench/peers.py --out``) as a comparison of one table: Kernel Tuner's strategies, Optuna and
Tunelab's own, replayed elsewhere with one accounting, shown beside the strategies Compare runs here.

Each row of the file is one run on one space: ``space`` (the cache's name), ``method`` ("KT pso", "Optuna TPE",
"Tunelab AUTO"), ``rep``, ``trace`` (best-so-far slowdown after each charged measurement) and, for Tunelab's runs,
the ``budget`` it ran with. The peers ran once at the largest budget; a smaller budget reads their trace's prefix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from engine.compare.run import Comparison
from engine.errors import UserError, brief

SOURCE = "bench/peers.py"


def read_peer_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a peer run file, checked (one line naming what is wrong)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"peer run {path}: no such file")
    try:
        rows = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise UserError(f"peer run {path.name}: not JSON ({error})") from None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise UserError(f"peer run {path.name}: expected a list of runs, as bench/peers.py --out writes")
    for i, row in enumerate(rows):
        missing = [k for k in ("space", "method", "rep", "trace") if k not in row]
        if missing:
            raise UserError(f"peer run {path.name}: run {i} has no '{missing[0]}'")
        if not isinstance(row["trace"], list) or not all(isinstance(v, (int, float)) for v in row["trace"]):
            raise UserError(f"peer run {path.name}: run {i} trace {brief(row['trace'])} is not a list of numbers")
    return rows


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
        raise UserError(f"peer run: no runs on space {space!r} (it has {', '.join(spaces) or 'none'})")
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
