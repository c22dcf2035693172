"""The candidate model matrix of a D-optimal search, checked before any exchange is tried.

R's ``model.matrix`` on raw values (engine/model/formula.py) gives X. Before searching, three things can
make the problem meaningless and each gets a one-line error: a non-finite entry (``I(1/x)`` at
x = 0), fewer candidate rows than coefficients, and columns that are linear combinations of others
on these candidates (aliased terms, e.g. ``I(x^2)`` when x has only two levels).

The exchange itself runs on a *whitened* copy ``Xw = X T`` with Xw'Xw / N = I. Exchange gains
(ratios of determinants, dispersions x'(Z'Z)⁻¹x) do not change under any invertible column
transformation, while raw columns such as ``threads_number`` (up to 1024) next to ``I(1/lws_y)``
(down to 1/1024) make Z'Z needlessly ill-conditioned for rank-one updates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.analysis.lsq import qr
from engine.errors import UserError
from engine.model.formula import ParsedFormula, model_matrix, parse

#: Eigenvalues of the scaled candidate moment matrix below this fraction of the largest are zero.
RANK_TOL = 1e-10


@dataclass(frozen=True)
class CandidateModel:
    """Raw (``X``) and whitened (``Xw``) candidate model matrices of one formula."""

    X: np.ndarray
    Xw: np.ndarray
    T: np.ndarray
    columns: tuple[str, ...]
    terms: tuple[str, ...]
    formula: ParsedFormula

    @property
    def k(self) -> int:
        return int(self.X.shape[1])


def _column_terms(term_slices: dict[str, slice], k: int) -> list[str]:
    names = [""] * k
    for term, sl in term_slices.items():
        for c in range(k)[sl]:
            names[c] = "(Intercept)" if term == "1" else term
    return names


def candidate_model(candidates: pd.DataFrame, formula: str) -> CandidateModel:
    """Check ``formula`` against ``candidates`` and build the raw and whitened model matrices."""
    if not isinstance(formula, str) or "~" not in formula:
        raise UserError(f"formula {formula!r}: expected a right-hand side such as '~ x1 + x2'")
    parsed = parse(formula, candidates.columns)
    if parsed.response is not None:
        raise UserError(f"formula {formula!r}: a design formula has no response; write '~ ...'")
    mm = model_matrix(parsed, candidates)
    X = np.ascontiguousarray(mm.X, dtype=float)
    n_rows, k = X.shape
    if n_rows < k:
        raise UserError(f"candidates: {n_rows} rows are fewer than the {k} coefficients of {formula!r}")
    finite = np.isfinite(X)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise UserError(f"formula {formula!r}: column '{mm.columns[col]}' is not finite on candidate row {row}")
    Xw, T = whiten(X, mm.columns, _column_terms(mm.term_slices, k))
    return CandidateModel(X=X, Xw=Xw, T=T, columns=mm.columns, terms=parsed.terms, formula=parsed)


def estimable_columns(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of X not aliased on its rows: R's rule, left to right, on unit-RMS
    columns (so that ``threads_number`` next to ``I(1/lws_y)`` is judged on shape, not units)."""
    scale = np.sqrt(np.mean(X * X, axis=0))
    scale[scale == 0] = 1.0
    return qr(X / scale).kept


def whiten(X: np.ndarray, columns: Sequence[str], terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(X T, T)`` with (XT)'(XT)/N = I; raises naming the aliased terms when X has no full rank."""
    scale = np.sqrt(np.mean(X * X, axis=0))
    scale[scale == 0] = 1.0
    Xs = X / scale
    gram = Xs.T @ Xs / len(X)
    values, vectors = np.linalg.eigh(gram)
    null = values <= RANK_TOL * values[-1]
    if null.any():
        involved = np.abs(vectors[:, null]).max(axis=1) > 1e-6
        names = list(dict.fromkeys(terms[c].replace(" ** ", "^") for c in np.flatnonzero(involved).tolist()))
        cols = [columns[c].replace(" ** ", "^") for c in np.flatnonzero(involved).tolist()]
        raise UserError(
            f"candidates cannot separate the model columns {', '.join(cols)}: "
            f"terms {', '.join(names)} are aliased (singular candidate set, rank {int((~null).sum())} < {len(values)})"
        )
    T = (vectors / np.sqrt(values)) / scale[:, None]
    return np.ascontiguousarray(X @ T), T
