"""Prediction over a candidate set, its argmin (with ties), and a constrained neighbourhood search.

Candidates are encoded exactly like the fitted data: the model matrix is built over the fitted rows
and the candidates together, so categorical levels and their dummy columns line up; a candidate
level never seen in the fit is refused (the model has no coefficient for it). Predictions are made on
the model's (possibly transformed) scale and mapped back; the transform is monotone, so the argmin is
the same on both scales.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel, solve_upper
from engine.analysis.quantiles import t_quantile
from engine.io.jsonable import plain
from engine.model.formula import model_matrix

if TYPE_CHECKING:
    from engine.space.factors import Space

Validity = np.ndarray | Callable[[pd.DataFrame], np.ndarray] | None
#: Relative (to the spread of the predictions) gap under which two predictions tie.
TIE_TOL = 1e-12
#: Largest full ±1-level box explored per refinement step; beyond it, one factor moves at a time.
MAX_BOX = 50_000


def candidate_matrix(model: LinearModel, candidates: pd.DataFrame) -> np.ndarray:
    """The candidates' model matrix, columns identical to (and aligned with) the fitted model's."""
    variables = list(model.variables_)
    missing = [v for v in variables if v not in candidates.columns]
    if missing:
        raise AnalysisError(f"candidates: no column {missing[0]!r} (the formula uses it)")
    rhs_text = "~ " + " + ".join(t.label for t in model.terms_) if model.terms_ else "~ 1"
    if not model.formula_.has_intercept:
        rhs_text += " - 1"
    both = pd.concat([model.data_[variables], candidates[variables]], ignore_index=True)
    matrix = model_matrix(rhs_text, both)
    if matrix.columns != model.matrix_.columns:
        new = sorted(set(matrix.columns) - set(model.matrix_.columns))
        raise AnalysisError(f"candidates: level(s) not seen in the fitted data ({', '.join(new[:3])})")
    X = matrix.X[model.n_ :, model.kept_]
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise AnalysisError(f"candidates: {int(bad.sum())} rows give non-finite model terms (e.g. row {int(np.argmax(bad))})")
    return X


def predict(model: LinearModel, candidates: pd.DataFrame, level: float = 0.95, X: np.ndarray | None = None,
            interval: str = "prediction") -> pd.DataFrame:
    """R's ``predict(..., interval = "prediction")`` (or ``"confidence"``: the interval of the mean
    response) on the model scale (``fit``, ``lwr``, ``upr``) and the same mapped back to the response
    scale (``predicted``, ``lower``, ``upper``)."""
    if interval not in ("prediction", "confidence"):
        raise AnalysisError(f"interval {interval!r}: expected 'prediction' or 'confidence'")
    X = candidate_matrix(model, candidates) if X is None else X
    beta = np.asarray(model.results_.params, dtype=float)
    fit = X @ beta
    # se of the mean: ||R^-T x|| · sigma, without forming (X'X)^-1; the rows of X R^-1 are those R^-T x, and
    # one k×k back substitution and a matrix product cost no more than a triangular solve of every candidate.
    scaled = X @ solve_upper(model.qr_.R, np.eye(model.qr_.rank))
    sigma2 = float(model.results_.ssr) / model.df_resid_
    se_pred = np.sqrt(sigma2 * ((interval == "prediction") + np.einsum("ij,ij->i", scaled, scaled)))
    half = t_quantile(0.5 + level / 2.0, model.df_resid_) * se_pred
    out = pd.DataFrame({"fit": fit, "lwr": fit - half, "upr": fit + half}, index=candidates.index)
    inverse = model.transform_.inverse
    out["predicted"], out["lower"], out["upper"] = inverse(fit), inverse(fit - half), inverse(fit + half)
    return out


@dataclass(frozen=True)
class Argmin:
    """The predicted minimum: 0-based row position, index label, values, and every tied position."""

    position: int
    label: object
    fit: float
    predicted: float
    ties: tuple[int, ...]
    point: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": self.position,
            "label": self.label,
            "fit": self.fit,
            "predicted": self.predicted,
            "n_rows_at_min": len(self.ties),
            "ties": list(self.ties),
            "point": self.point,
        }


def valid_mask(candidates: pd.DataFrame, valid: Validity) -> np.ndarray:
    """Which candidate rows ``valid`` (a mask, a function of the rows, or None: all) keeps."""
    if valid is None:
        return np.ones(len(candidates), dtype=bool)
    mask = np.asarray(valid(candidates) if callable(valid) else valid, dtype=bool)
    if mask.shape != (len(candidates),):
        raise AnalysisError(f"validity mask: expected {len(candidates)} booleans, got shape {mask.shape}")
    return mask


def argmin(prediction: pd.DataFrame, candidates: pd.DataFrame, valid: Validity = None) -> Argmin:
    """The first minimum of ``fit`` among valid rows (R's ``which.min``), and the rows tied with it."""
    mask = valid_mask(candidates, valid)
    if not mask.any():
        raise AnalysisError("candidates: no valid row to minimise over")
    fit = np.where(mask, prediction["fit"].to_numpy(), np.inf)
    best = int(np.argmin(fit))
    finite = fit[np.isfinite(fit)]
    tol = TIE_TOL * max(float(finite.max() - finite.min()), abs(fit[best]) * np.finfo(float).eps)
    ties = tuple(int(i) for i in np.flatnonzero(fit <= fit[best] + tol))
    best = ties[0]  # the first of the tied rows, whichever the BLAS's last bits made smallest
    point = {k: plain(v) for k, v in candidates.iloc[best].items()}
    return Argmin(best, plain(candidates.index[best]), float(fit[best]), float(prediction["predicted"].iloc[best]), ties, point)


def undetermined_factors(names: Sequence[str], variables: Collection[str], fixed: Collection[str]) -> list[str]:
    """The factors whose level a model's best cannot tell: not in the model, not fixed by a decision
    (the argmin holds an arbitrary level for them, which must not pass for a tuned setting)."""
    return [name for name in names if name not in variables and name not in fixed]


def predicted_minimum(model: LinearModel, candidates: pd.DataFrame, valid: Validity = None) -> Argmin:
    """Predict over the candidate set and take the argmin among the valid rows."""
    return argmin(predict(model, candidates), candidates, valid)


@dataclass(frozen=True)
class Refinement:
    """Result of the neighbourhood search: the final point, its prediction, and the path length."""

    point: dict[str, Any]
    fit: float
    predicted: float
    steps: int
    evaluated: int


def refine_neighbourhood(
    model: LinearModel,
    start: Mapping[str, Any],
    levels: Mapping[str, Sequence[Any]] | None = None,
    valid: Callable[[pd.DataFrame], np.ndarray] | None = None,
    space: Space | None = None,
    fixed: Sequence[str] = (),
    max_steps: int = 100,
) -> Refinement:
    """Local search on the level lattice from ``start``: move the model's discrete factors by one
    level (all together when the box is small, else one at a time) to the best valid neighbour, until
    none improves. ``space`` may stand in for ``levels``/``valid`` (``space.factor(n).levels``,
    ``space.valid_mask(df)``); factors in ``fixed`` never move."""
    if space is not None:
        levels = levels or {n: list(space.factor(n).levels) for n in space.names}
        valid = valid or space.valid_mask
    if levels is None:
        raise AnalysisError("refinement: give the factor levels (or a space)")
    movable = [f for f in model.variables_ if f in levels and f not in set(fixed)]
    current = dict(start)
    for name in movable:
        if current.get(name) not in list(levels[name]):
            raise AnalysisError(f"refinement: start value {current.get(name)!r} is not a level of {name!r}")
    here = pd.DataFrame([current])
    best_fit = float(predict(model, here)["fit"].iloc[0])
    evaluated, steps = 1, 0
    while steps < max_steps:
        options = [_neighbour_levels(list(levels[f]), current[f]) for f in movable]
        rows = _neighbours(current, movable, options)
        if rows.empty:
            break
        rows = rows.loc[valid_mask(rows, valid)]
        evaluated += len(rows)
        if rows.empty:
            break
        fits = predict(model, rows)["fit"].to_numpy()
        i = int(np.argmin(fits))
        if not fits[i] < best_fit:
            break
        best_fit, current, steps = float(fits[i]), {k: plain(v) for k, v in rows.iloc[i].items()}, steps + 1
    predicted = float(model.transform_.inverse(np.array([best_fit]))[0])
    return Refinement(current, best_fit, predicted, steps, evaluated)


def _neighbour_levels(levels: list[Any], value: Any) -> list[Any]:
    """The value and its adjacent levels, in level order."""
    i = levels.index(value)
    return levels[max(i - 1, 0) : i + 2]


def _neighbours(current: dict[str, Any], movable: list[str], options: list[list[Any]]) -> pd.DataFrame:
    """Every other point of the ±1-level box, or one-factor moves when the box is too large."""
    size = int(np.prod([len(o) for o in options])) if options else 0
    if size <= MAX_BOX:
        combos = [dict(zip(movable, c)) for c in itertools.product(*options)]
    else:
        combos = [{f: v} for f, opts in zip(movable, options) for v in opts]
    rows = [{**current, **c} for c in combos]
    rows = [r for r in rows if any(r[f] != current[f] for f in movable)]
    return pd.DataFrame(rows, columns=list(current))
