"""From a table of measurements to the rows and model matrix a fit can use.

Missing measurements are a normal outcome of a run (a failed point), so they are excluded and
counted rather than refused; everything that makes a fit meaningless (too few rows, a constant
response, a term that evaluates to ±inf) is refused with a one-line message that says what is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.io.table_import import listing
from engine.model.formula import ModelMatrix, ParsedFormula, model_matrix


class AnalysisError(UserError):
    """The data cannot support the requested analysis; the message says why in one line."""


def mean_of_repeats(data: pd.DataFrame, response: str, by: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per configuration (the columns ``by``, default all but the response) with the mean
    of its non-missing repeats and their count ``n_repeats``."""
    if response not in data.columns:
        raise AnalysisError(f"response {response!r}: no such column")
    by = [c for c in data.columns if c != response] if by is None else check_columns(data, by, "by")
    grouped = data.groupby(by, sort=False, dropna=False)[response]
    out = grouped.mean().rename(response).to_frame()
    out["n_repeats"] = grouped.count()
    return out.reset_index()


def check_columns(data: pd.DataFrame, names: Sequence[str], what: str) -> list[str]:
    """``names`` as a list; one that is not a column of ``data`` is refused in one line naming ``what``, the unknown
    names and the columns there are, since a mistyped grouping must not fall back to another one."""
    unknown = [name for name in names if name not in data.columns]
    if unknown:
        shown = ", ".join(brief(name, 40) for name in unknown[:5]) + (f" … ({len(unknown)} in all)" if len(unknown) > 5 else "")
        raise AnalysisError(f"{what}: unknown column{'s' if len(unknown) > 1 else ''} {shown}; "
                            f"the columns are {listing(data.columns)}")
    return list(names)


@dataclass(frozen=True)
class CompleteRows:
    """The rows a fit uses, their model matrix, and how many rows were excluded as missing."""

    data: pd.DataFrame
    matrix: ModelMatrix
    n_excluded: int


def complete_rows(formula: ParsedFormula, data: pd.DataFrame) -> CompleteRows:
    """Drop rows with a missing response or factor value, then check the fit is estimable."""
    if formula.response is None:
        raise AnalysisError(f"formula {formula.text!r}: needs a response on the left of '~'")
    used = [c for c in formula.variables | {formula.response} if c in data.columns]
    missing = data[used].isna().any(axis=1).to_numpy().copy()
    matrix = model_matrix(formula, data)
    if matrix.y is not None:
        missing |= ~np.isfinite(matrix.y)
    if missing.any():
        data = data.loc[~missing]
        matrix = model_matrix(formula, data)
    _check_finite(matrix)
    n, k = matrix.X.shape
    n_excluded = int(missing.sum())
    if n < k + 1:
        dropped = f" ({n_excluded} excluded as missing)" if n_excluded else ""
        raise AnalysisError(
            f"formula {formula.text!r}: {k} coefficients need at least {k + 1} rows with measurements; got {n}{dropped}"
        )
    y = matrix.y
    assert y is not None, "a formula with a response has y"
    if np.ptp(y) == 0:
        raise AnalysisError(f"response {formula.response!r} is constant ({y[0]:.6g}) on all {n} rows: nothing to explain")
    return CompleteRows(data, matrix, n_excluded)


def _check_finite(matrix: ModelMatrix) -> None:
    bad = ~np.isfinite(matrix.X)
    if bad.any():
        column = int(np.argmax(bad.any(axis=0)))
        rows = int(bad[:, column].sum())
        raise AnalysisError(f"formula term column {matrix.columns[column]!r} is not finite on {rows} rows (e.g. 1/0)")
