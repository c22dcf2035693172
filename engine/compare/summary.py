"""The paper's comparison table from a benchmark's runs, and the paper's own figures beside it.

Per strategy: mean, min, max and median slowdown of the returned configuration and mean and max
budget used (docs/dlmt.md §4.5); runs that found nothing valid count as infinite slowdown and are
reported in ``failed``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engine.compare.run import Comparison

COLUMNS = ["strategy", "runs", "mean", "min", "max", "median", "budget_mean", "budget_max", "failed"]

#: The paper's Laplacian table (complete_1000.csv, docs/dlmt.md §4.5): mean/min/max/median slowdown, budget mean/max.
PAPER_LAPLACIAN = pd.DataFrame(
    [
        ("RS", 1.1024, 1.000, 1.388, 1.0795, 120.00, 120),
        ("LHS", 1.1745, 1.000, 1.524, 1.1882, 98.92, 125),
        ("GS", 6.4601, 1.000, 124.764, 1.7993, 22.17, 106),
        ("GSR", 1.2270, 1.000, 3.164, 1.1866, 120.00, 120),
        ("GA", 1.1184, 1.000, 1.646, 1.0856, 120.00, 120),
        ("LM", 1.0218, 1.0122, 3.771, 1.0122, 119.00, 119),
        ("DOPT", 1.6832, 1.3804, 2.913, 1.6431, 120.00, 120),
        ("DLMT", 1.0122, 1.0122, 1.0122, 1.0122, 54.84, 56),
    ],
    columns=["strategy", "mean", "min", "max", "median", "budget_mean", "budget_max"],
)


def summary_table(comparison: Comparison) -> pd.DataFrame:
    """One row per strategy, in the comparison's order."""
    rows = []
    for name in comparison.strategies:
        runs = comparison.runs[comparison.runs["strategy"] == name]
        slow = runs["slowdown"].to_numpy(dtype=float)
        finite = slow[np.isfinite(slow)]
        budget = runs["budget_used"].to_numpy(dtype=float)
        rows.append({
            "strategy": name,
            "runs": len(runs),
            "mean": float(finite.mean()) if len(finite) else np.nan,
            "min": float(finite.min()) if len(finite) else np.nan,
            "max": float(finite.max()) if len(finite) else np.nan,
            "median": float(np.median(finite)) if len(finite) else np.nan,
            "budget_mean": float(budget.mean()) if len(budget) else np.nan,
            "budget_max": int(budget.max()) if len(budget) else 0,
            "failed": int(len(slow) - len(finite)),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def with_paper(summary: pd.DataFrame, paper: pd.DataFrame = PAPER_LAPLACIAN) -> pd.DataFrame:
    """The summary with the paper's mean slowdown and mean budget beside ours, and their ratios."""
    ref = paper.set_index("strategy")
    out = summary.copy()
    out["paper_mean"] = out["strategy"].map(ref["mean"])
    out["mean_ratio"] = out["mean"] / out["paper_mean"]
    out["paper_budget_mean"] = out["strategy"].map(ref["budget_mean"])
    out["budget_ratio"] = out["budget_mean"] / out["paper_budget_mean"]
    return out


def summary_records(summary: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The JSON form: strategy -> {mean, min, max, median, budget_mean, budget_max, runs, failed}."""
    return {
        row["strategy"]: {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                          for k, v in row.items() if k != "strategy"}
        for row in summary.to_dict(orient="records")
    }
