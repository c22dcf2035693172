"""D-optimal rows over a prebuilt candidate model matrix: the strategies' fast exchange.

:func:`engine.design.optimal_design` is the reference (AlgDesign's criteria, formulas, DataFrames)
and what people use on the Design page. A benchmark builds thousands of designs from cached term
columns (:mod:`engine.strategies.terms`), and engine.design has no entry point that takes a model
matrix, so this module holds the smallest piece that does: Fedorov's exchange with the best
(design row, candidate) swap per iteration (the Δ of docs/dlmt.md §2.3), on a whitened matrix, with
forced rows. Candidate sets are Orio-sized samples (``pool × trials`` rows, dlmt.md §5.2), so a
design costs milliseconds. tests/test_strategies_dlmt.py compares its D with engine.design's.

:func:`estimable_terms` is R's aliasing rule on the candidates, which also does Orio's "cleaning"
(a factor left with one level, or ``I(x^2)`` of one left with two, cannot be estimated).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg

from engine.strategies.fastlm import qr_fit

#: Exchanges with a relative determinant gain at or below this stop the search.
GAIN_TOL = 1e-9


def estimable_terms(X: np.ndarray, slices: Sequence[slice]) -> list[int]:
    """Indices of the terms with at least one column not aliased on these rows (R's rule, in order)."""
    scale = np.sqrt(np.mean(X * X, axis=0))
    scale[scale == 0] = 1.0
    kept = set(qr_fit(X / scale).kept.tolist())
    return [t for t, sl in enumerate(slices) if any(c in kept for c in range(sl.start, sl.stop))]


def whiten(X: np.ndarray) -> np.ndarray:
    """The non-aliased columns of X, transformed so that X'X/N = I (exchange gains do not change)."""
    scale = np.sqrt(np.mean(X * X, axis=0))
    scale[scale == 0] = 1.0
    Xs = X / scale
    Xs = Xs[:, qr_fit(Xs).kept]
    chol = linalg.cholesky(Xs.T @ Xs / len(Xs), lower=True)
    return linalg.solve_triangular(chol, Xs.T, lower=True).T


def _start(X: np.ndarray, pool: np.ndarray, n_free: int, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random start; when it is singular, rows are added one by one where the design is weakest."""
    rows = rng.choice(pool, n_free, replace=False)
    gram = base + X[rows].T @ X[rows]
    if np.linalg.matrix_rank(gram) == X.shape[1]:
        return rows
    chosen: list[int] = []
    gram = base + 1e-8 * np.eye(X.shape[1])
    order = rng.permutation(pool)
    for _ in range(n_free):
        C = np.linalg.inv(gram)
        d = np.einsum("ij,jk,ik->i", X[order], C, X[order])
        d[np.isin(order, chosen)] = -np.inf
        pick = int(order[np.argmax(d)])
        chosen.append(pick)
        gram = gram + np.outer(X[pick], X[pick])
    return np.array(chosen, dtype=np.int64)


def doptimal_rows(
    X: np.ndarray,
    n: int,
    *,
    forced: np.ndarray | None = None,
    rng: np.random.Generator,
    repeats: int = 1,
    max_iter: int = 500,
) -> np.ndarray:
    """Row positions of X in a D-optimal design of ``n`` rows (``forced`` rows included, first)."""
    forced = np.unique(np.asarray(forced if forced is not None else [], dtype=np.int64))
    Xw = whiten(X)
    N = len(Xw)
    taken = np.zeros(N, dtype=bool)
    taken[forced] = True
    pool = np.flatnonzero(~taken)
    n_free = min(n - len(forced), len(pool))
    if n_free < 1:
        return forced
    base = Xw[forced].T @ Xw[forced]
    best, best_logdet = None, -np.inf
    for _ in range(max(1, repeats)):
        rows = _start(Xw, pool, n_free, base, rng)
        in_design = taken.copy()
        in_design[rows] = True
        for _ in range(max_iter):
            Z = Xw[rows]
            try:
                C = np.linalg.inv(base + Z.T @ Z)
            except np.linalg.LinAlgError:
                break
            A = Xw @ C
            d = np.einsum("ij,ij->i", A, Xw)
            ds = d[rows]
            cross = A[rows] @ Xw.T
            gain = cross * cross + np.multiply.outer(1.0 - ds, d) - ds[:, None]
            gain[:, in_design] = -np.inf
            flat = int(np.argmax(gain))
            i, j = divmod(flat, N)
            if not gain[i, j] > GAIN_TOL:
                break
            in_design[rows[i]] = False
            in_design[j] = True
            rows[i] = j
        sign, logdet = np.linalg.slogdet(base + Xw[rows].T @ Xw[rows])
        if sign > 0 and logdet > best_logdet:
            best, best_logdet = rows.copy(), logdet
    if best is None:
        best = rows
    return np.concatenate([forced, np.sort(best)])
