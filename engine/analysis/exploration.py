"""Data for exploring a fitted model, as JMP's prediction profiler and optuna-dashboard's views do:
the response as each factor moves with the others held (the profiler), each factor's share of the
explained variation (importance), and the predicted surface over a pair of factors (a contour)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.analysis.effects import natural_levels
from engine.analysis.fit import LinearModel
from engine.analysis.prediction import predict


def profile(model: LinearModel, at: Mapping[str, Any], level: float = 0.95,
            levels_of: Mapping[str, Sequence[Any]] | None = None) -> pd.DataFrame:
    """For each model factor, the predicted mean response (with its confidence interval) at each of its
    levels (``levels_of``, e.g. the space's, else those of the fitted data), every other factor held at
    ``at``: one panel of the profiler per factor."""
    parts = []
    for factor in model.variables_:
        levels = list(levels_of[factor]) if levels_of and factor in levels_of else natural_levels(model.data_[factor])
        rows = pd.DataFrame([{**at, factor: value} for value in levels])
        predicted = predict(model, rows, level, interval="confidence")
        parts.append(pd.DataFrame({"factor": factor, "level": pd.Series(levels, dtype=object),
                                   "current": [value == at.get(factor) for value in levels],
                                   **predicted[["predicted", "lower", "upper"]].reset_index(drop=True)}))
    return pd.concat(parts, ignore_index=True)


def importance(model: LinearModel, anova_table: pd.DataFrame) -> pd.DataFrame:
    """Each factor's share of the explained sum of squares: its terms' Sum Sq, an interaction's split
    evenly among its factors. A linear-model analogue of optuna's importance bars."""
    sums = anova_table.set_index("term")["Sum Sq"].fillna(0.0)  # a 0-df term (in the others' span) adds none
    share = dict.fromkeys(model.variables_, 0.0)
    for term in model.terms_:
        for factor in term.variables:
            share[factor] += float(sums.get(term.display, 0.0)) / len(term.variables)
    total = sum(share.values()) or 1.0
    table = pd.DataFrame({"factor": list(share), "share": [v / total for v in share.values()]})
    return table.sort_values("share", ascending=False, kind="stable").reset_index(drop=True)


def surface(model: LinearModel, a: str, b: str, at: Mapping[str, Any]) -> pd.DataFrame:
    """The predicted response over every (level of ``a``, level of ``b``), the other factors at ``at``."""
    rows = pd.DataFrame([{**at, a: x, b: y} for x in natural_levels(model.data_[a])
                         for y in natural_levels(model.data_[b])])
    predicted = predict(model, rows, interval="confidence")["predicted"].to_numpy()
    return pd.DataFrame({a: rows[a], b: rows[b], "predicted": predicted})
