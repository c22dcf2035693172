"""Where a design draws its configurations from: a search space, or a table of candidate rows.

Generators need the same few things from both: factor levels (for level-index designs such as
Latin hypercubes and for two-level screening designs), a validity test and the list of valid
configurations. :class:`CandidateTable` gives a plain DataFrame of candidates (a CSV of valid
configurations, a sample of a huge space) the :class:`~engine.space.factors.Space` interface those generators
use: levels are the distinct values of each column, and *valid* means "is one of the rows".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.space.factors import Factor, Space


def _kind(column: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(column):
        return "boolean"
    if pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=float)
        return "integer" if np.all(values == np.round(values)) else "ordinal"
    return "categorical"


class CandidateTable:
    """A candidate DataFrame seen as a space: factors are its columns, valid rows are its rows."""

    def __init__(self, frame: pd.DataFrame, factors: Sequence[str] | None = None) -> None:
        names = list(frame.columns) if factors is None else list(factors)
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise UserError(f"candidates: no column named {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})")
        if not len(frame):
            raise UserError("candidates: the table has no rows")
        for name in names:
            if frame[name].isna().any():
                raise UserError(f"candidates: column {name!r} has missing values")
        self.frame = frame.reset_index(drop=True)
        self.factors = tuple(Factor(str(n), _kind(frame[n]), tuple(pd.unique(frame[n]))) for n in names)
        self._space = Space(self.factors)
        self._index = self._space.to_level_index(self.frame)
        self._keys = {row.tobytes(): i for i, row in reversed(list(enumerate(self._index)))}

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.factors]

    def factor(self, name: str) -> Factor:
        return self._space.factor(name)

    @property
    def size(self) -> int:
        return self._space.size

    def enumerate(self) -> pd.DataFrame:
        """The distinct candidate rows (factor columns only), in table order."""
        return self.frame.loc[self.distinct_rows(), self.names].reset_index(drop=True)

    def distinct_rows(self) -> np.ndarray:
        return np.array(sorted(self._keys.values()), dtype=np.int64)

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rows = self.sample_rows(n, seed)
        return self.frame.loc[rows, self.names].reset_index(drop=True)

    def sample_rows(self, n: int, seed: int | None = None) -> np.ndarray:
        """``n`` distinct candidate rows drawn uniformly, reproducible by ``seed``."""
        distinct = self.distinct_rows()
        if n > len(distinct):
            raise UserError(f"runs {n} is more than the {len(distinct):,} distinct candidate rows")
        return distinct[np.random.default_rng(seed).choice(len(distinct), n, replace=False)]

    def rows_of(self, frame: pd.DataFrame) -> np.ndarray:
        """Candidate row of each configuration of ``frame``, −1 where it is not a candidate."""
        out = np.full(len(frame), -1, dtype=np.int64)
        on_grid = np.ones(len(frame), dtype=bool)
        index = np.zeros((len(frame), len(self.factors)), dtype=np.int64)
        for j, f in enumerate(self.factors):
            index[:, j] = f.index_of(frame[f.name].to_numpy())
            on_grid &= index[:, j] >= 0
        for i in np.flatnonzero(on_grid):
            out[i] = self._keys.get(index[i].tobytes(), -1)
        return out

    def valid_mask(self, frame: pd.DataFrame) -> np.ndarray:
        return self.rows_of(frame) >= 0

    def to_level_index(self, frame: pd.DataFrame) -> np.ndarray:
        return self._space.to_level_index(frame)

    def from_level_index(self, index: np.ndarray) -> pd.DataFrame:
        return self._space.from_level_index(index)


Source = Space | CandidateTable


def as_source(source: Space | CandidateTable | pd.DataFrame) -> Source:
    """A Space or CandidateTable as is; a DataFrame becomes a CandidateTable of all its columns."""
    if isinstance(source, (Space, CandidateTable)):
        return source
    if isinstance(source, pd.DataFrame):
        return CandidateTable(source)
    raise TypeError(f"expected a Space or a candidate DataFrame, got {type(source).__name__}")

