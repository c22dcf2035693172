"""The fitted model's optimum over the valid space: the one point a decision fixes, the profiler opens
at and the caption quotes.

A uniform sample cannot stand in for the space: the toy's 11^8 = 214 M configurations sampled 20,000 times
hold the model's optimum with probability about 1e-4, so the best *sampled* row was proposed, 1.5 units
worse than the model's own optimum (issue 30). :func:`model_optimum` searches the space itself:

* only the factors the model uses move, with those tied to them by a constraint (a factor the model does
  not use changes no prediction; it takes its level from ``reference``, e.g. the best measurement, else
  the first valid one); fixed factors stay at their levels;
* **exact** when what moves has at most ``limit`` configurations (before constraints): every valid one is
  predicted and the first minimum in level order is taken (R's ``which.min``);
* otherwise **coordinate descent over levels**: from ``starts`` random valid configurations (reproducible
  by ``seed``), the best fitted rows of the data and a given ``start`` (e.g. where a decision was proposed,
  so holding its fixes never loses the point it fixed them at), each factor in turn (and each pair of factors that
  share a model term or a constraint, together) moves to its best valid level, until a whole sweep
  improves nothing; the best end point is taken. A polynomial of low order in each factor is where this
  finds the optimum; it is the best found, not a proof, and :class:`Optimum` says which was done.

A table study's rows are its valid space: give them as a DataFrame and the search is exact over them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel
from engine.analysis.labels import is_categorical
from engine.analysis.prediction import candidate_matrix
from engine.errors import UserError
from engine.io.jsonable import plain
from engine.space.expr import FORMULA_FUNCTIONS, Expression, check
from engine.space.factors import Factor, Space

#: Most configurations (before constraints) predicted one by one; larger spaces are searched by descent.
EXACT_LIMIT = 500_000
#: Rows predicted per model-matrix build (bounds the memory of the exact search).
CHUNK = 100_000
#: Random valid starts of the coordinate descent (the data's best rows are added to them).
STARTS = 32
#: Best fitted data rows added to the descent's starts.
DATA_STARTS = 8
#: Largest grid of a pair of factors moved together by the descent.
PAIR_LIMIT = 4_096
#: Sweeps after which the descent stops even if it still improves (each sweep strictly improves).
MAX_SWEEPS = 100


@dataclass(frozen=True)
class Optimum:
    """Where the model predicts the best response, and how that was established.

    ``point`` is a whole configuration of the space; ``fit`` the prediction on the model's (possibly
    transformed) scale, ``predicted`` on the response's; ``method`` is ``"exact"``, ``"coordinate
    descent"`` or ``"given"`` (a point the caller chose); ``evaluated`` counts the configurations predicted; ``size`` the configurations searched
    (the valid ones when exact, the whole grid of the moving factors when not); ``starts`` the descent's
    starts (0 when exact); ``undetermined`` the free factors the model does not use (their levels come
    from the reference, not the model)."""

    point: dict[str, Any]
    fit: float
    predicted: float
    method: str
    evaluated: int
    size: int
    starts: int = 0
    seed: int | None = None
    undetermined: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return self.method == "exact"

    def describe(self) -> str:
        """One sentence for a caption: what was searched and whether the optimum is proven."""
        if self.method == "given":
            return "a point chosen by the caller"
        if self.exact and self.size == 1:
            return "the one valid configuration the fixed factors leave"
        if self.exact:
            return f"the model's exact optimum over all {self.size:,} valid configurations"
        return (f"the best of a coordinate descent over the levels from {self.starts} starts ({self.evaluated:,} "
                f"configurations predicted, of {self.size:,}): the model's optimum as found, not proven")

    def to_dict(self) -> dict[str, Any]:
        return {"point": dict(self.point), "fit": self.fit, "predicted": self.predicted, "method": self.method,
                "evaluated": self.evaluated, "size": self.size, "starts": self.starts, "seed": self.seed,
                "undetermined": list(self.undetermined)}


def model_optimum(
    model: LinearModel,
    space: Space | pd.DataFrame,
    *,
    fixed: Mapping[str, Any] | None = None,
    reference: Mapping[str, Any] | None = None,
    limit: int = EXACT_LIMIT,
    starts: int = STARTS,
    seed: int = 0,
    start: Mapping[str, Any] | None = None,
) -> Optimum:
    """The configuration of ``space`` (its valid configurations, or the rows of a DataFrame listing them)
    where ``model`` predicts the smallest response, with the ``fixed`` factors held at their levels.
    ``reference`` (e.g. the best measured configuration) gives the levels of factors the model does not use.
    Exact up to ``limit`` configurations, else coordinate descent from ``starts`` starts drawn with ``seed``
    (and from ``start``, when it is a valid configuration that agrees with ``fixed``)."""
    fixed = dict(fixed or {})
    if isinstance(space, pd.DataFrame):
        return _over_rows(model, space, fixed, reference)
    if limit < 1 or starts < 1:
        raise AnalysisError(f"optimum: limit {limit!r} and starts {starts!r} must be positive")
    try:
        held = space.fix(fixed)
    except UserError as exc:
        raise AnalysisError(f"optimum: {exc}") from None
    unknown = [v for v in model.variables_ if v not in space.names]
    if unknown:
        raise AnalysisError(f"optimum: the model uses {unknown[0]!r}, which is not a factor of the space")
    moving = _moving(model, held, fixed)
    search = _subspace(held, moving, fixed, model_levels(model, held))
    rest = [n for n in held.names if n not in moving and n not in fixed]
    filler = _fill(held, rest, fixed, reference, seed)
    if search is None:  # nothing moves: the prediction is one number
        point = {**{n: fixed[n] for n in fixed}, **filler}
        fit = float(_fits(model, pd.DataFrame([point]))[0])
        return _result(model, held, point, fit, "exact", 1, 1, 0, None, rest)
    if search.size <= limit:
        index, fit, evaluated, size = _exact(model, search)
        method, used = "exact", 0
    else:
        index, fit, evaluated, used = _descent(model, search, starts, seed, start)
        method, size = "coordinate descent", search.size
    found = search.from_level_index(index[None, :]).iloc[0].to_dict()
    point = {**found, **filler}
    return _result(model, held, point, fit, method, evaluated, size, used, None if method == "exact" else seed, rest)


def _result(model: LinearModel, space: Space, point: Mapping[str, Any], fit: float, method: str, evaluated: int,
            size: int, starts: int, seed: int | None, undetermined: Sequence[str]) -> Optimum:
    ordered = {n: plain(point[n]) for n in space.names if n in point}
    predicted = float(model.transform_.inverse(np.array([fit]))[0])
    return Optimum(ordered, fit, predicted, method, evaluated, size, starts, seed, tuple(undetermined))


def _fits(model: LinearModel, frame: pd.DataFrame) -> np.ndarray:
    """Predictions on the model's scale (no intervals: the search needs only the order)."""
    beta = np.asarray(model.results_.params, dtype=float)
    out = np.empty(len(frame))
    for start in range(0, len(frame), CHUNK):
        part = frame.iloc[start:start + CHUNK]
        out[start:start + len(part)] = candidate_matrix(model, part) @ beta
    return out


def _constraint_names(space: Space) -> list[frozenset[str]]:
    return [Expression.compile(text, space.names).names for text in space.constraints]


def _moving(model: LinearModel, space: Space, fixed: Mapping[str, Any]) -> list[str]:
    """The free factors the model uses, and those a constraint ties to them (transitively): what must move
    together for every move to stay valid. Fixed factors tie nothing: they are constants."""
    moving = {v for v in model.variables_ if v not in fixed}
    links = [names - set(fixed) for names in _constraint_names(space)]
    grew = True
    while grew:
        grew = False
        for names in links:
            if names & moving and not names <= moving:
                moving |= names
                grew = True
    return [n for n in space.names if n in moving]


def model_levels(model: LinearModel, space: Space) -> dict[str, list[Any]]:
    """The levels of each model factor the model can predict at: the space's, but for a categorical factor only
    those of the fitted data (the model has no coefficient for the others)."""
    data = model.data_
    categorical: set[str] = set()
    for term in model.terms_:
        for expression in term.factors:
            if is_categorical(expression, data):
                categorical |= check(expression, data.columns, FORMULA_FUNCTIONS, what="formula term")
    levels = {}
    for name in model.variables_:
        if name in space.names:
            present = set(pd.unique(data[name].dropna())) if name in categorical else None
            levels[name] = [v for v in space.factor(name).levels if present is None or v in present]
    return levels


def _subspace(space: Space, moving: Sequence[str], fixed: Mapping[str, Any],
              levels: Mapping[str, Sequence[Any]]) -> Space | None:
    """The moving factors (categorical ones at the levels the model knows) and the fixed ones, with every
    constraint over them; None when nothing moves."""
    if not moving:
        return None
    keep = set(moving) | set(fixed)
    factors = []
    for f in space.factors:
        if f.name not in keep:
            continue
        known = tuple(levels.get(f.name, f.levels)) if f.name not in fixed else tuple(f.levels)
        if not known:
            raise AnalysisError(f"optimum: no level of {f.name!r} was seen in the fitted data")
        factors.append(f if known == tuple(f.levels) else Factor(f.name, f.kind, known))
    constraints = [text for text, names in zip(space.constraints, _constraint_names(space)) if names <= keep]
    return Space(factors, constraints)


def _fill(space: Space, rest: Sequence[str], fixed: Mapping[str, Any], reference: Mapping[str, Any] | None,
          seed: int) -> dict[str, Any]:
    """Levels of the free factors the model does not use: the reference's when valid, else the first
    valid combination (in level order) of those factors' own constraints."""
    if not rest:
        return {}
    keep = set(rest) | set(fixed)
    own = Space([f for f in space.factors if f.name in keep],
                [text for text, names in zip(space.constraints, _constraint_names(space)) if names <= keep])
    if reference is not None and all(n in reference for n in rest):
        row = pd.DataFrame([{**{n: reference[n] for n in rest}, **fixed}])
        if bool(own.valid_mask(row)[0]):
            return {n: plain(reference[n]) for n in rest}
    try:
        first = own.enumerate().iloc[0] if own.enumerable else own.sample(1, seed=seed).iloc[0]
    except UserError as exc:
        raise AnalysisError(f"optimum: {exc}") from None
    return {n: plain(first[n]) for n in rest}


def _exact(model: LinearModel, space: Space) -> tuple[np.ndarray, float, int, int]:
    """The first minimum, in level order, of the prediction over every valid configuration."""
    try:
        frame = space.enumerate()
    except UserError as exc:
        raise AnalysisError(f"optimum: {exc}") from None
    fits = _fits(model, frame)
    best = int(np.argmin(fits))
    return space.to_level_index(frame.iloc[[best]])[0], float(fits[best]), len(frame), len(frame)


def _blocks(model: LinearModel, space: Space) -> list[tuple[int, ...]]:
    """What the descent moves at once: each factor, then each pair sharing a model term or a constraint
    (an interaction's optimum, or a move only valid when both change) whose grid is small enough."""
    names = space.names
    counts = [f.n_levels for f in space.factors]
    movable = [j for j, c in enumerate(counts) if c > 1]
    linked = [t.variables for t in model.terms_] + _constraint_names(space)
    pairs = sorted({(a, b) for group in linked for a, b in itertools.combinations(sorted(names.index(n) for n in group
                    if n in names), 2) if a in movable and b in movable and counts[a] * counts[b] <= PAIR_LIMIT})
    return [(j,) for j in movable] + list(pairs)


def _descent(model: LinearModel, space: Space, starts: int, seed: int,
             start: Mapping[str, Any] | None) -> tuple[np.ndarray, float, int, int]:
    """Coordinate descent over levels from many starts, the starts still moving advanced in one batch per
    block; a start that a whole sweep left in place (or that reached another's point) is done."""
    current = _starts(model, space, starts, seed, start)
    fits = _fits(model, space.from_level_index(current))
    evaluated, used = len(current), len(current)
    counts = [f.n_levels for f in space.factors]
    blocks = _blocks(model, space)
    tol = 1e-12 * max(1.0, float(np.max(np.abs(fits))))
    active = np.ones(len(current), dtype=bool)
    for _ in range(MAX_SWEEPS):
        moved = np.zeros(len(current), dtype=bool)
        for block in blocks:
            live = np.flatnonzero(active)
            grid = np.array(list(itertools.product(*[range(counts[j]) for j in block])), dtype=np.int64)
            rows = np.repeat(current[live], len(grid), axis=0)
            rows[:, list(block)] = np.tile(grid, (len(live), 1))
            ok = space.constraint_mask(space.index_columns(rows), len(rows))
            flat = np.full(len(rows), np.inf)
            if ok.any():
                flat[ok] = _fits(model, space.from_level_index(rows[ok]))
            evaluated += int(ok.sum())
            values = flat.reshape(len(live), len(grid))
            pick = np.argmin(values, axis=1)
            low = values[np.arange(len(live)), pick]
            gain = low < fits[live] - tol
            chosen = rows.reshape(len(live), len(grid), -1)[np.arange(len(live)), pick]
            current[live[gain]] = chosen[gain]
            fits[live[gain]] = low[gain]
            moved[live[gain]] = True
        _, first = np.unique(current, axis=0, return_index=True)
        active = moved & np.isin(np.arange(len(current)), first)
        if not active.any():
            break
    best = int(np.argmin(fits))
    return current[best], float(fits[best]), evaluated, used


def _starts(model: LinearModel, space: Space, starts: int, seed: int, start: Mapping[str, Any] | None) -> np.ndarray:
    """The given start when it is valid here, the data's best fitted configurations that are, then ``starts``
    random valid ones."""
    data = model.data_
    known = [n for n in space.names if n in data.columns]
    rows = []
    if start is not None and all(n in start for n in space.names):
        row = pd.DataFrame([{n: start[n] for n in space.names}])
        levels = {f.name: set(f.levels) for f in space.factors}
        if all(row[n].iloc[0] in levels[n] for n in space.names) and bool(space.valid_mask(row)[0]):
            rows.append(space.to_level_index(row))
    if len(known) == len(space.names):
        order = np.argsort(model.fitted_, kind="stable")
        frame = data.iloc[order][space.names].drop_duplicates().head(4 * DATA_STARTS).reset_index(drop=True)
        frame = frame[space.valid_mask(frame)].head(DATA_STARTS)
        if len(frame):
            rows.append(space.to_level_index(frame))
    try:
        n = min(starts, space.count_valid()) if space.enumerable else starts
        rows.append(space.to_level_index(space.sample(n, seed=seed)))
    except UserError as exc:
        if not rows:
            raise AnalysisError(f"optimum: {exc}") from None
    index = np.concatenate(rows)
    _, first = np.unique(index, axis=0, return_index=True)
    return index[np.sort(first)]


def _over_rows(model: LinearModel, rows: pd.DataFrame, fixed: Mapping[str, Any],
               reference: Mapping[str, Any] | None) -> Optimum:
    """Exact over listed configurations (a table study's rows): the first minimum, or among rows the model
    cannot tell apart, the one closest to ``reference``."""
    missing = [n for n in [*model.variables_, *fixed] if n not in rows.columns]
    if missing:
        raise AnalysisError(f"optimum: the configurations have no column {missing[0]!r}")
    mask = np.ones(len(rows), dtype=bool)
    for name, value in fixed.items():
        mask &= (rows[name] == value).to_numpy()
    rows = rows[mask].reset_index(drop=True)
    if rows.empty:
        raise AnalysisError("optimum: no configuration agrees with the fixed factors")
    fits = _fits(model, rows)
    low = float(fits.min())
    tied = np.flatnonzero(fits <= low + 1e-12 * max(abs(low), 1.0))
    pick = int(tied[0])
    if len(tied) > 1 and reference is not None:
        columns = [c for c in rows.columns if c in reference]
        distance = (rows.iloc[tied][columns] != pd.Series({c: reference[c] for c in columns})).sum(axis=1)
        pick = int(tied[int(np.argmin(distance.to_numpy()))])
    point = {str(k): plain(v) for k, v in rows.iloc[pick].items()}
    undetermined = tuple(c for c in rows.columns if c not in model.variables_ and c not in fixed and c != model.response_)
    predicted = float(model.transform_.inverse(np.array([fits[pick]]))[0])
    return Optimum(point, float(fits[pick]), predicted, "exact", len(rows), len(rows), 0, None, undetermined)
