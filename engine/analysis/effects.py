"""Effects as data: main-effect and interaction means of the measurements, and effect screening.

Main-effect and interaction plots show observed means (on the response's own scale, the one a person
reads); effect screening ranks the model's coefficients by *scaled estimates* — half the change of the
fitted response over each column's observed range — so effects of factors on different scales
compare, and pairs them with half-normal quantiles for a Daniel plot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.labels import stars


def _observed(model: LinearModel) -> pd.DataFrame:
    frame = model.data_.copy()
    frame["_response"] = model.y_raw_
    return frame


def main_effects(model: LinearModel, factors: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean and count of the response at each level of each factor (default: the model's factors)."""
    factors = list(model.variables_ if factors is None else factors)
    frame = _observed(model)
    parts = []
    for factor in factors:
        if factor not in frame.columns:
            raise AnalysisError(f"main effects: unknown factor {factor!r}")
        grouped = frame.groupby(factor, sort=True)["_response"].agg(["mean", "count"]).reset_index()
        parts.append(pd.DataFrame({"factor": factor, "level": grouped[factor].astype(object), "mean": grouped["mean"], "n": grouped["count"]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["factor", "level", "mean", "n"])


def interaction_effects(model: LinearModel, a: str, b: str) -> pd.DataFrame:
    """Mean and count of the response for each (level of ``a``, level of ``b``) cell."""
    frame = _observed(model)
    for factor in (a, b):
        if factor not in frame.columns:
            raise AnalysisError(f"interaction: unknown factor {factor!r}")
    grouped = frame.groupby([a, b], sort=True)["_response"].agg(["mean", "count"]).reset_index()
    return pd.DataFrame(
        {"factor_a": a, "level_a": grouped[a], "factor_b": b, "level_b": grouped[b], "mean": grouped["mean"], "n": grouped["count"]}
    )


def effect_screening(model: LinearModel) -> pd.DataFrame:
    """Coefficients with scaled estimates, largest first, and their half-normal plotting quantiles."""
    X = model.X_
    span = np.ptp(X, axis=0)
    keep = span > 0  # the intercept (and any constant column) has no effect to screen
    estimate = np.asarray(model.results_.params, dtype=float)[keep]
    p = np.asarray(model.results_.pvalues, dtype=float)[keep]
    table = pd.DataFrame(
        {
            "term": np.asarray(model.column_names_, dtype=object)[keep],
            "estimate": estimate,
            "scaled_estimate": estimate * span[keep] / 2.0,
            "t value": np.asarray(model.results_.tvalues, dtype=float)[keep],
            "Pr(>|t|)": p,
            "stars": [stars(v) for v in p],
        }
    )
    table = table.iloc[np.argsort(-np.abs(table["scaled_estimate"].to_numpy()), kind="stable")].reset_index(drop=True)
    m = len(table)
    ascending_rank = np.arange(m, 0, -1)
    table["half_normal_quantile"] = stats.norm.ppf(0.5 + 0.5 * (ascending_rank - 0.5) / m) if m else []
    return table
