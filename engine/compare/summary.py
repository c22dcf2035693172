"""The paper's comparison table from a benchmark's runs, and the paper's own figures beside it.

Per strategy: mean (with its 95% bootstrap interval), min, max and median slowdown of the returned configuration
and mean and max budget used (docs/dlmt.md §4.5); runs that found nothing valid count as infinite slowdown and are
reported in ``failed``. ``vs_best`` says whether a strategy's mean is within its runs' noise of the best mean (the
bootstrap interval of the difference holds 0) or worse, so two strategies a table ranks apart are not read as
different when they are not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engine.compare.intervals import difference_interval, mean_interval
from engine.compare.run import Comparison

COLUMNS = ["strategy", "runs", "mean", "mean_low", "mean_high", "vs_best", "min", "max", "median", "budget_mean",
           "budget_max", "failed"]

#: What a person reads over each column (the stored frame keeps its short snake_case names): a
#: short header, so thirteen columns fit the table, and the longer meaning for its tooltip.
HEADERS: dict[str, tuple[str, str]] = {
    "strategy": ("Strategy", "The search strategy replayed on the table"),
    "runs": ("Runs", "Repetitions of the strategy"),
    "mean": ("Mean slowdown", "Mean slowdown of the returned configuration (× the table's optimum)"),
    "mean_low": ("Low (95%)", "Low end of the mean's 95% bootstrap interval over the runs"),
    "mean_high": ("High (95%)", "High end of the mean's 95% bootstrap interval over the runs"),
    "vs_best": ("Vs best", "best; within noise (the 95% interval of the difference from the best mean holds 0); "
                "or worse"),
    "min": ("Min", "Smallest slowdown over the runs"),
    "max": ("Max", "Largest slowdown over the runs"),
    "median": ("Median", "Median slowdown over the runs"),
    "budget_mean": ("Mean budget", "Mean number of measurements a run used"),
    "budget_max": ("Max budget", "Most measurements a run used"),
    "failed": ("Failed", "Runs that found no valid configuration (left out of the slowdowns)"),
    "paper_mean": ("Paper mean", "The paper's mean slowdown for this strategy"),
    "mean_ratio": ("Mean ÷ paper", "Our mean slowdown ÷ the paper's"),
    "paper_budget_mean": ("Paper budget", "The paper's mean budget for this strategy"),
    "budget_ratio": ("Budget ÷ paper", "Our mean budget ÷ the paper's"),
}


def header(column: str) -> tuple[str, str]:
    """(header, tooltip) for a summary column; an unknown snake_case name reads as words ("best_slowdown"
    -> "Best slowdown") rather than running off the table."""
    words = column.replace("_", " ").strip()
    return HEADERS.get(column, (words[:1].upper() + words[1:], words))

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
    rows, finite_by_name = [], {}
    for name in comparison.strategies:
        runs = comparison.runs[comparison.runs["strategy"] == name]
        slow = runs["slowdown"].to_numpy(dtype=float)
        finite = slow[np.isfinite(slow)]
        budget = runs["budget_used"].to_numpy(dtype=float)
        finite_by_name[name] = finite
        low, high = mean_interval(finite)
        rows.append({
            "strategy": name,
            "runs": len(runs),
            "mean": float(finite.mean()) if len(finite) else np.nan,
            "mean_low": low,
            "mean_high": high,
            "min": float(finite.min()) if len(finite) else np.nan,
            "max": float(finite.max()) if len(finite) else np.nan,
            "median": float(np.median(finite)) if len(finite) else np.nan,
            "budget_mean": float(budget.mean()) if len(budget) else np.nan,
            "budget_max": int(budget.max()) if len(budget) else 0,
            "failed": int(len(slow) - len(finite)),
        })
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["vs_best"] = _versus_best(table, finite_by_name)
    return table


def _versus_best(table: pd.DataFrame, finite_by_name: dict[str, np.ndarray]) -> list[str]:
    """Each strategy against the one with the lowest mean slowdown: "best", "within noise" or "worse" (blank for a
    strategy whose runs all failed)."""
    if table["mean"].notna().sum() == 0:
        return [""] * len(table)
    best = str(table.loc[table["mean"].idxmin(), "strategy"])
    out = []
    for name, mean in zip(table["strategy"], table["mean"]):
        if name == best or not np.isfinite(mean):
            out.append("best" if name == best else "")
            continue
        low, _ = difference_interval(finite_by_name[name], finite_by_name[best])
        out.append("worse" if low > 0 else "within noise")
    return out


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
    """The JSON form: strategy -> {runs, mean, mean_low, mean_high, vs_best, min, max, median, budget_mean, budget_max,
    failed}."""
    return {
        row["strategy"]: {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                          for k, v in row.items() if k != "strategy"}
        for row in summary.to_dict(orient="records")
    }
