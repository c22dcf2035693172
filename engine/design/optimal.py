"""D- (or A-, I-) optimal designs over candidate configurations: AlgDesign's ``optFederov`` for people.

The candidates are a DataFrame of valid configurations, or a :class:`~engine.space.factors.Space` (its
enumerated valid configurations, or a random sample of them when there are too many). Rows that
were already measured can be forced in: they stay in the design and do not count against
``trials`` (augmentation). Numbers match R: the model matrix is R's ``model.matrix`` on raw values
and the criteria are AlgDesign's (:mod:`engine.design.criteria`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from engine.analysis.blas import single_blas_thread
from engine.design.criteria import Criteria, criteria
from engine.design.fedorov import CRITERIA, fedorov
from engine.design.model import candidate_model, estimable_columns, whiten
from engine.design.result import DesignResult
from engine.errors import UserError
from engine.model.formula import model_matrix, parse
from engine.space.factors import Space

#: Candidate rows drawn from a space whose valid configurations are more numerous than this.
MAX_CANDIDATES = 100_000


Rows: TypeAlias = Sequence[int] | np.ndarray | pd.DataFrame | None


def candidates_of(space: Space, max_candidates: int = MAX_CANDIDATES, seed: int | None = None) -> pd.DataFrame:
    """The valid configurations of ``space``, or a uniform sample of ``max_candidates`` of them."""
    if space.enumerable:
        valid = space.enumerate()
        if len(valid) <= max_candidates:
            return valid
        keep = np.sort(np.random.default_rng(seed).choice(len(valid), max_candidates, replace=False))
        return valid.iloc[keep].reset_index(drop=True)
    return space.sample(max_candidates, seed)


def _locate(candidates: pd.DataFrame, rows: Rows, what: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Candidate indices of ``rows`` (indices or configurations) and the configurations not found."""
    if rows is None:
        return np.zeros(0, dtype=np.int64), candidates.iloc[:0]
    if not isinstance(rows, pd.DataFrame):
        index = np.asarray(list(rows), dtype=np.int64)
        bad = index[(index < 0) | (index >= len(candidates))]
        if len(bad):
            raise UserError(f"{what}: row {bad[0]} is not a candidate row (0..{len(candidates) - 1})")
        return np.unique(index), candidates.iloc[:0]
    keys = [c for c in rows.columns if c in candidates.columns]
    if not keys:
        raise UserError(f"{what}: no column in common with the candidates")
    lookup = candidates[keys].reset_index(drop=True).reset_index().drop_duplicates(keys)
    merged = rows[keys].merge(lookup, on=keys, how="left")
    found = merged["index"].notna().to_numpy()
    return np.unique(merged.loc[found, "index"].to_numpy(dtype=np.int64)), rows.loc[~found, keys]


@single_blas_thread
def optimal_design(
    candidates: pd.DataFrame | Space,
    formula: str,
    trials: int,
    *,
    repeats: int = 5,
    seed: int | None = None,
    criterion: str = "D",
    forced: Rows = None,
    exclude: Rows = None,
    polish: int = 12,
    max_candidates: int = MAX_CANDIDATES,
) -> DesignResult:
    """Choose ``trials`` candidate rows maximising the criterion, best of ``repeats`` random starts.

    ``forced`` rows (candidate indices, or configurations such as the runs already measured) stay in
    the design on top of ``trials``; configurations not among the candidates are appended to them.
    ``exclude`` rows are never chosen. ``result.rows`` index the (possibly extended) candidate table,
    forced rows first; ``result.design`` holds those candidate rows.
    """
    started = time.perf_counter()
    if criterion not in CRITERIA:
        raise UserError(f"criterion {criterion!r} must be one of {', '.join(CRITERIA)}")
    info: dict[str, Any] = {}
    if isinstance(candidates, Space):
        candidates = candidates_of(candidates, max_candidates, seed)
        info["candidate_source"] = "space"
    candidates = candidates.reset_index(drop=True)
    forced_idx, missing = _locate(candidates, forced, "forced")
    if len(missing):
        candidates = pd.concat([candidates, missing], ignore_index=True)
        forced_idx = np.concatenate([forced_idx, np.arange(len(candidates) - len(missing), len(candidates))])
    exclude_idx, _ = _locate(candidates, exclude, "exclude")
    model = candidate_model(candidates, formula)
    k = model.k
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise UserError(f"trials {trials!r} must be a positive integer")
    if trials + len(forced_idx) < k:
        extra = f" + {len(forced_idx)} forced rows" if len(forced_idx) else ""
        raise UserError(f"trials {trials}{extra} is fewer than the {k} coefficients of {formula!r}")
    weight = None
    if criterion == "A":
        weight = model.T.T @ model.T
    elif criterion == "I":
        weight = model.Xw.T @ model.Xw / len(model.Xw)
    found = fedorov(
        model.Xw,
        trials,
        forced=forced_idx,
        exclude=exclude_idx,
        criterion=criterion,
        weight=weight,
        repeats=repeats,
        seed=seed,
        polish=polish,
    )
    rows = np.concatenate([forced_idx, found.rows])
    crit = criteria(model.X[rows], model.X)
    info.update(
        candidates=len(candidates),
        k=k,
        columns=list(model.columns),
        criterion=criterion,
        exchanges=found.exchanges,
        failed_starts=found.failed_starts,
    )
    return DesignResult(
        kind="dopt",
        design=candidates.iloc[rows].reset_index(drop=True),
        seconds=time.perf_counter() - started,
        rows=tuple(int(r) for r in rows),
        criteria={name: value for name, value in crit.as_dict().items() if name != "log_det"},
        log_det=crit.log_det,
        repeats=repeats,
        forced=tuple(int(r) for r in forced_idx),
        info=info,
    )


@single_blas_thread
def optimal_rows(
    X: np.ndarray,
    trials: int,
    *,
    forced: Sequence[int] | np.ndarray | None = None,
    exclude: Sequence[int] | np.ndarray | None = None,
    repeats: int = 5,
    seed: int | np.random.Generator | None = None,
    polish: int = 12,
) -> np.ndarray:
    """D-optimal rows of a prebuilt candidate model matrix ``X``: ``forced`` rows first, then
    ``trials`` rows chosen by :func:`engine.design.fedorov.fedorov`.

    For callers that build model matrices themselves (strategies replaying thousands of searches
    from cached columns). Columns aliased on the candidates are dropped by R's rule, left to right
    (:func:`~engine.design.model.estimable_columns`), as ``lm`` would; the D-optimal design of
    the remaining columns is the one of the estimable model. ``seed`` may be a Generator (consumed).
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise UserError(f"model matrix: expected a finite 2-D array, got shape {X.shape}")
    kept = estimable_columns(X)
    if len(kept) == 0:
        raise UserError("model matrix: every column is zero on the candidates")
    names = [f"column {c}" for c in kept]
    Xw, _ = whiten(np.ascontiguousarray(X[:, kept]), names, names)
    forced_idx = np.unique(np.asarray(forced if forced is not None else [], dtype=np.int64))
    found = fedorov(Xw, trials, forced=forced_idx, exclude=exclude, repeats=repeats, seed=seed, polish=polish)
    return np.concatenate([forced_idx, found.rows])


@single_blas_thread
def evaluate(formula: str, design: pd.DataFrame, candidates: pd.DataFrame) -> Criteria:
    """AlgDesign's ``eval.design(formula, design, X = candidates)``: the criteria of a given design.

    Both model matrices come from one frame, so a categorical level missing from the design still
    gets its (all-zero) column and the two matrices have the same columns.
    """
    used = sorted(parse(formula, candidates.columns).variables)
    missing = [c for c in used if c not in design.columns]
    if missing:
        raise UserError(f"design: no column named {missing[0]!r}")
    both = pd.concat([design[used], candidates[used]], ignore_index=True)
    X = model_matrix(formula, both).X
    return criteria(X[: len(design)], X[len(design) :])
