"""How close a throughput predictor is to the truth, in the figures the field reports (BHive, DiffTune,
uiCA): MAPE, median APE, the fraction within 5%, and Kendall's τ-b (pandas' ``corr(method="kendall")``,
DiffTune's choice), over the blocks both sides have."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


@dataclass(frozen=True)
class Accuracy:
    """Errors are relative to the truth: |predicted − truth| / truth."""

    n: int
    mape: float
    median_ape: float
    within_5pct: float
    kendall_tau: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def accuracy(predicted: Any, truth: Any) -> Accuracy:
    """The figures over the pairs where both values are finite and the truth is positive."""
    p, t = np.asarray(predicted, dtype=float), np.asarray(truth, dtype=float)
    if p.shape != t.shape:
        raise ValueError(f"accuracy: {p.size} predictions for {t.size} true values")
    keep = np.isfinite(p) & np.isfinite(t) & (t > 0)
    p, t = p[keep], t[keep]
    if not len(t):
        return Accuracy(0, np.nan, np.nan, np.nan, np.nan)
    ape = np.abs(p - t) / t
    tau = float(stats.kendalltau(p, t).statistic) if len(t) > 1 else np.nan  # τ-b, ties counted
    return Accuracy(int(len(t)), float(ape.mean()), float(np.median(ape)), float((ape <= 0.05).mean()), tau)


def accuracy_table(frame: pd.DataFrame, by: str | list[str], predicted: str = "cycles", truth: str = "truth") -> pd.DataFrame:
    """One row of :class:`Accuracy` per group of ``frame`` (e.g. per predictor, or predictor and category)."""
    keys = [by] if isinstance(by, str) else list(by)
    rows = [{**dict(zip(keys, key)), **accuracy(group[predicted], group[truth]).to_dict()}
            for key, group in frame.groupby(keys, sort=True)]
    return pd.DataFrame(rows)
