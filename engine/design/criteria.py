"""Design criteria exactly as R's AlgDesign defines them, so numbers can be compared with R's.

With Z the n × k model matrix of the design, X the N × k model matrix of the candidates and
M = Z'Z / n (AlgDesign normalises by n, so D is comparable across design sizes):

* ``D``   = det(M)^(1/k)
* ``A``   = trace(M⁻¹) / k
* ``I``   = trace(M⁻¹ · X'X / N)  (``eval.design``'s average prediction variance over the candidates)
* ``Ge``  = k / max over candidates of x'M⁻¹x  (G-efficiency)
* ``Dea`` = exp(1 − 1/Ge)  (lower bound on the approximate-theory D-efficiency)

AlgDesign rounds Ge and Dea to 3 decimals when it prints them; these are the unrounded values.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Criteria:
    """The criteria of one design; ``log_det`` = log det(M), so D = exp(log_det / k)."""

    D: float
    A: float
    I: float
    Ge: float
    Dea: float
    log_det: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def max_dispersion(X: np.ndarray, M_inv: np.ndarray, chunk: int = 65_536) -> float:
    """max over the rows x of X of x' M⁻¹ x, in chunks so a 10⁶-row candidate set stays small."""
    best = -math.inf
    for start in range(0, len(X), chunk):
        block = X[start : start + chunk]
        best = max(best, float(np.einsum("ij,ij->i", block @ M_inv, block).max()))
    return best


def criteria(Z: np.ndarray, X: np.ndarray) -> Criteria:
    """Criteria of design matrix ``Z`` against candidate matrix ``X`` (a singular Z gives D = 0)."""
    Z = np.asarray(Z, dtype=float)
    X = np.asarray(X, dtype=float)
    n, k = Z.shape
    M = Z.T @ Z / n
    sign, log_det = np.linalg.slogdet(M)
    if sign <= 0 or not np.isfinite(log_det):
        return Criteria(D=0.0, A=math.inf, I=math.inf, Ge=0.0, Dea=0.0, log_det=-math.inf)
    M_inv = np.linalg.solve(M, np.eye(k))
    ge = k / max_dispersion(X, M_inv)
    return Criteria(
        D=math.exp(log_det / k),
        A=float(np.trace(M_inv)) / k,
        I=float(np.sum(M_inv * (X.T @ X / len(X)))),
        Ge=ge,
        Dea=math.exp(1.0 - 1.0 / ge),
        log_det=float(log_det),
    )
