"""Least squares by Householder QR with R's rule for aliased columns.

Every sum of squares in the ANOVA tables comes from QR *effects* (``Q'y``), as in R's ``aov``: the
sequential SS of a block of columns is the squared norm of its effects, which is far more accurate
than a difference of two residual sums when the response is ~1e-9 s. Sub-models (Type II/III) are
fitted on the k×k factor ``R`` and the effects instead of the n×k data: with X = QR, the span of any
column subset of X is Q times the span of the same columns of R, so the sums of squares are equal
and each sub-model costs a k×k QR, not an n×k one. A column whose norm, after
projecting out the columns before it, falls below 1e-7 of its own norm is aliased and dropped
(R's ``dqrdc2`` tolerance), so rank-deficient designs give R's tables instead of noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: R's ``lm`` tolerance for declaring a column linearly dependent on the ones before it.
ALIAS_TOL = 1e-7


@dataclass(frozen=True)
class QR:
    """Thin QR of the non-aliased columns ``kept`` of a matrix."""

    Q: np.ndarray
    R: np.ndarray
    kept: np.ndarray

    @property
    def rank(self) -> int:
        return len(self.kept)

    def effects(self, y: np.ndarray) -> np.ndarray:
        effects: np.ndarray = self.Q.T @ y
        return effects

    def fitted(self, y: np.ndarray) -> np.ndarray:
        fitted: np.ndarray = self.Q @ (self.Q.T @ y)
        return fitted

    def resid(self, y: np.ndarray) -> np.ndarray:
        resid: np.ndarray = y - self.fitted(y)
        return resid

    def rss(self, y: np.ndarray) -> float:
        r = self.resid(y)
        return float(r @ r)

    def leverage(self) -> np.ndarray:
        leverage: np.ndarray = np.einsum("ij,ij->i", self.Q, self.Q)
        return leverage


def qr(X: np.ndarray) -> QR:
    """QR of ``X`` after dropping, one at a time and left to right, the aliased columns."""
    kept = np.arange(X.shape[1])
    norms = np.linalg.norm(X, axis=0)
    while True:
        Q, R = np.linalg.qr(X[:, kept])
        diag = np.zeros(len(kept))
        diag[: min(R.shape)] = np.abs(np.diag(R))  # columns past the row count are aliased
        with np.errstate(invalid="ignore"):
            aliased = ~(diag > ALIAS_TOL * norms[kept])
        if not aliased.any():
            return QR(Q, R, kept)
        kept = np.delete(kept, int(np.argmax(aliased)))


def added_ss(X: np.ndarray, base: Sequence[int], added: Sequence[int], y: np.ndarray) -> tuple[float, int]:
    """Sum of squares (and df) that the columns ``added`` explain after the columns ``base``.

    Pass either the data (X, y) or, much cheaper, a full QR's (R, effects): the result is the same."""
    base, added = list(base), list(added)
    decomposition = qr(X[:, base + added])
    effects = decomposition.effects(y)
    tail = decomposition.kept >= len(base)
    return float(effects[tail] @ effects[tail]), int(tail.sum())
