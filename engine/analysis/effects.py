"""Effects as data: model-based main-effect and interaction means, effect screening, and the effect
summary's pruning under the model's hierarchy.

Main-effect and interaction plots show least-squares means (the model's mean response over a balanced
reference grid, with confidence intervals, on the response's own scale, the one a person reads): an
unbalanced design's raw marginal means would mix the effects of correlated factors. Effect screening
ranks the model's coefficients by *scaled estimates* — half the change of the fitted response over
each column's observed range — so effects of factors on different scales compare, and pairs them
with half-normal quantiles for a Daniel plot.

Pruning keeps the model hierarchical, as JMP's stepwise does for an effect and the effects containing it
("if Stepwise removes Ct or T, it must also remove Ct*T"): removing a term removes every term that contains
it (``x6`` takes ``I(x6^2)``, ``I(x6^3)`` and ``x6:x3`` with it, and the page says so), and the least
significant term offered for removal is one no other term contains. A model left with ``I(x6^2)`` but no
``x6`` changes meaning with the origin of x6, and its factor tests mix in what the lower term carried.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.labels import Term, stars
from engine.analysis.prediction import candidate_matrix, predict
from engine.analysis.quantiles import normal_quantile
from engine.analysis.tails import log_worth
from engine.errors import UserError
from engine.model.formula import formula_text
from engine.model.terms import term_parts

#: Largest grid of categorical levels a mean averages over; beyond it, those factors sit at their mode.
MAX_GRID = 2_000


def natural_levels(values: pd.Series) -> list[Any]:
    """The distinct levels in the order a person reads them: numbers numerically (2 before 16),
    anything else as text."""
    unique = list(pd.unique(values.dropna()))
    if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) for v in unique):
        return sorted(unique, key=float)
    return sorted(unique, key=str)


def _reference(model: LinearModel, varying: Sequence[str], numeric_at_mean: bool) -> pd.DataFrame:
    """The rows a model-based mean averages over: numeric factors at their mean, each categorical
    factor at every one of its levels with equal weight (a balanced grid, as emmeans does)."""
    data = model.data_
    held: dict[str, Any] = {}
    grids: dict[str, list[Any]] = {}
    for name in model.variables_:
        if name in varying:
            continue
        column = data[name]
        numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        if numeric and numeric_at_mean:
            held[name] = float(column.mean())
        else:
            grids[name] = natural_levels(column)
    if math.prod(len(levels) for levels in grids.values()) > MAX_GRID:
        grids = {name: [data[name].mode().iloc[0]] for name in grids}
    rows = [dict(zip(grids, combo)) for combo in itertools.product(*grids.values())]
    return pd.DataFrame([{**held, **row} for row in rows] or [held])


def _model_means(model: LinearModel, cells: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per row of ``cells`` (levels of the varying factors): the mean prediction over the reference
    grid, with its confidence interval, on the response's scale."""
    varying = list(cells.columns)
    for numeric_at_mean in (True, False):  # a numeric column coded C(x) has no level at its mean
        reference = _reference(model, varying, numeric_at_mean)
        grid = cells.reset_index(drop=True).merge(reference, how="cross")
        try:
            X = candidate_matrix(model, grid)
            break
        except AnalysisError:
            if not numeric_at_mean:
                raise
    averaged = X.reshape(len(cells), len(reference), X.shape[1]).mean(axis=1)
    means = predict(model, cells.reset_index(drop=True), level, X=averaged, interval="confidence")
    return means[["predicted", "lower", "upper"]]


def _counts(model: LinearModel, by: list[str]) -> pd.Series:
    return model.data_.groupby(by, sort=False).size()


def _batched_means(model: LinearModel, cells: Sequence[pd.DataFrame], level: float) -> list[pd.DataFrame] | None:
    """:func:`_model_means` of every frame of ``cells`` from one model matrix (a formula's matrix build costs
    more than its rows: one per factor was 40% of an Analyze rerun, issue 31); None where a numeric column
    has no level at its mean (the per-frame path then tries the reference levels)."""
    grids = [part.reset_index(drop=True).merge(_reference(model, list(part.columns), True), how="cross") for part in cells]
    try:
        X = candidate_matrix(model, pd.concat(grids, ignore_index=True))
    except AnalysisError:
        return None
    out, start = [], 0
    for part, grid in zip(cells, grids):
        block = X[start:start + len(grid)]
        start += len(grid)
        averaged = block.reshape(len(part), len(grid) // len(part), X.shape[1]).mean(axis=1)
        means = predict(model, part.reset_index(drop=True), level, X=averaged, interval="confidence")
        out.append(means[["predicted", "lower", "upper"]])
    return out


def main_effects(model: LinearModel, factors: Sequence[str] | None = None, level: float = 0.95) -> pd.DataFrame:
    """Model-based (least-squares) mean response at each level of each factor, levels in natural order:
    the other factors held at their means or averaged over their levels, so an unbalanced design does
    not mix the effects of its factors as raw marginal means do. ``n``: observations at the level."""
    names = list(model.variables_ if factors is None else factors)
    for factor in names:
        if factor not in model.variables_:
            raise AnalysisError(f"main effects: {factor!r} is not a factor of the model")
    cells = [pd.DataFrame({factor: natural_levels(model.data_[factor])}) for factor in names]
    batched = _batched_means(model, cells, level) if cells else []
    parts = []
    for i, factor in enumerate(names):
        levels = list(cells[i][factor])
        means = batched[i] if batched is not None else _model_means(model, cells[i], level)
        counts = _counts(model, [factor])
        parts.append(pd.DataFrame({"factor": factor, "level": pd.Series(levels, dtype=object), **means,
                                   "n": [int(counts.get(v, 0)) for v in levels]}))
    columns = ["factor", "level", "predicted", "lower", "upper", "n"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def interaction_effects(model: LinearModel, a: str, b: str, level: float = 0.95) -> pd.DataFrame:
    """Model-based mean response for each (level of ``a``, level of ``b``) cell, levels in natural order."""
    for factor in (a, b):
        if factor not in model.variables_:
            raise AnalysisError(f"interaction: {factor!r} is not a factor of the model")
    pairs = [(x, y) for x in natural_levels(model.data_[a]) for y in natural_levels(model.data_[b])]
    cells = pd.DataFrame(pairs, columns=[a, b])
    means = _model_means(model, cells, level)
    counts = _counts(model, [a, b])
    return pd.DataFrame({"factor_a": a, "level_a": cells[a].astype(object), "factor_b": b,
                         "level_b": cells[b].astype(object), **means,
                         "n": [int(counts.get((x, y), 0)) for x, y in pairs]})


def strongest_pair(model: LinearModel, anova_table: pd.DataFrame) -> tuple[str, str] | None:
    """The pair an interaction plot starts from: the factors of the most significant two-factor term,
    else the two factors with the smallest p-values of their own terms (None with < 2 factors)."""
    if len(model.variables_) < 2:
        return None
    p = anova_table.set_index("term")["Pr(>F)"]
    ranked = sorted(model.terms_, key=lambda t: (not np.isfinite(p.get(t.display, np.nan)), p.get(t.display, np.inf)))
    for term in ranked:
        if len(term.variables) == 2:
            first, second = sorted(term.variables)
            return first, second
    order = list(dict.fromkeys(v for term in ranked for v in sorted(term.variables)))
    return order[0], order[1]


def effect_summary(model: LinearModel, anova_table: pd.DataFrame) -> pd.DataFrame:
    """JMP's effect summary: one row per model term with its LogWorth (−log10 p; 2 is p = 0.01, exact
    even where p underflows a double), most significant first — what a person prunes from; ``^`` (JMP's
    caret) marks a term that another term of the model contains."""
    by_term = anova_table.set_index("term")
    df_resid = float(by_term.loc["Residuals", "Df"]) if "Residuals" in by_term.index else float(model.df_resid_)
    rows = []
    for term in model.terms_:
        contained = "^" if any(contains(other, term, model.variables_) for other in model.terms_) else ""
        if term.display in by_term.index and by_term.loc[term.display, "Df"] > 0:  # 0 df: inside the others' span
            row = by_term.loc[term.display]
            worth = log_worth(float(row["F value"]), float(row["Df"]), df_resid)
            rows.append((term.display, float(row["Pr(>F)"]), worth, contained))
        else:
            rows.append((term.display, np.nan, np.nan, contained))
    table = pd.DataFrame(rows, columns=["term", "Pr(>F)", "LogWorth", "^"])
    return table.sort_values("LogWorth", ascending=False, kind="stable", na_position="last")[
        ["term", "LogWorth", "Pr(>F)", "^"]].reset_index(drop=True)


def contains(outer: Term, inner: Term, names: Sequence[str]) -> bool:
    """Whether ``outer`` contains ``inner`` under the polynomial hierarchy: every factor of ``inner`` is in
    ``outer`` at the same or a higher power (``x`` is in ``I(x^2)``, ``I(x^3)`` and ``x:z``; ``I(x^2)`` in
    ``I(x^3)``; ``I(1/x)`` only in terms with ``I(1/x)``). Terms outside that grammar (``log(x)``, ``C(f)``)
    follow car's rule: every factor expression of ``inner`` is one of ``outer``'s."""
    if outer is inner or outer.display == inner.display:
        return False
    try:
        big, small = dict(term_parts(outer.display, names)), term_parts(inner.display, names)
    except UserError:
        return outer.contains(inner)
    return all(f in big and (big[f] == p or 0 < p < big[f]) for f, p in small)


def containing_terms(model: LinearModel, terms: Sequence[str]) -> list[str]:
    """The model's other terms that contain one of ``terms`` (R display names): what removing them takes along."""
    asked = [t for t in model.terms_ if t.display in set(terms)]
    return [t.display for t in model.terms_
            if t.display not in set(terms) and any(contains(t, inner, model.variables_) for inner in asked)]


def formula_without(model: LinearModel, terms: Sequence[str]) -> str:
    """The model's formula less ``terms`` (R display names) and every term containing one of them, so the
    model stays hierarchical; the intercept kept as it was."""
    gone = set(terms) | set(containing_terms(model, terms))
    kept = [t.display for t in model.terms_ if t.display not in gone]
    return formula_text(model.response_, kept, model.formula_.has_intercept)


def weakest_term(model: LinearModel, summary: pd.DataFrame) -> str | None:
    """The least significant term of an :func:`effect_summary` that no other term contains (removing it
    takes nothing else along); None for a model without terms."""
    free = summary[summary["^"] == ""]
    return str(free["term"].iloc[-1]) if len(free) else None


def effect_screening(model: LinearModel) -> pd.DataFrame:
    """Coefficients with scaled estimates, largest first, and their half-normal plotting quantiles."""
    X = model.X_
    span = np.ptp(X, axis=0)
    keep = span > 0  # the intercept (and any constant column) has no effect to screen
    estimate = np.asarray(model.results_.params, dtype=float)[keep]
    p = model.p_values_[keep]
    table = pd.DataFrame(
        {
            "term": np.asarray(model.column_names_, dtype=object)[keep],
            "estimate": estimate,
            "scaled_estimate": estimate * span[keep] / 2.0,
            "t value": model.t_values_[keep],
            "Pr(>|t|)": p,
            "stars": [stars(v) for v in p],
        }
    )
    table = table.iloc[np.argsort(-np.abs(table["scaled_estimate"].to_numpy()), kind="stable")].reset_index(drop=True)
    m = len(table)
    ascending_rank = np.arange(m, 0, -1)
    table["half_normal_quantile"] = normal_quantile(0.5 + 0.5 * (ascending_rank - 0.5) / m) if m else []
    return table
