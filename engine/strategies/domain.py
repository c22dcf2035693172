"""What a strategy searches: a space in level-index form, and its known-valid candidates.

Strategies work on level indices (one small integer per factor) and on integer *codes* (the
mixed-radix number of a configuration), never on DataFrames: a benchmark replays a thousand
searches per strategy, so "was this measured?" must be a dict lookup and "the design's rows" an
array gather. A :class:`Domain` is built once per process and shared by every search over the same
space; it also caches per-term model columns over the candidates (:mod:`engine.model.columns`).

``candidates`` are the configurations known to be valid before anything is measured: the rows of an
exhaustive table (the Laplacian: validity = membership in the table), or every configuration of an
enumerable space that satisfies its constraints. A huge space has none; strategies then draw a
random valid pool (Orio's candidate sampling).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.space.factors import Space

#: Largest search space whose codes fit an int64 (mixed-radix product of level counts).
MAX_CODE_SPACE = 2**62


class Domain:
    """A space with fast encodings and (when known) the level indices of its valid candidates."""

    def __init__(self, space: Space, candidates: pd.DataFrame | np.ndarray | None = None) -> None:
        if space.size >= MAX_CODE_SPACE:
            raise UserError(f"space: {space.size:.3g} configurations is too many to search (limit {MAX_CODE_SPACE:.3g})")
        self.space = space
        self.names = space.names
        self.n_levels = np.array([f.n_levels for f in space.factors], dtype=np.int64)
        # first factor varies slowest, as in Space.enumerate
        self.strides = np.ones(len(self.n_levels), dtype=np.int64)
        for j in range(len(self.n_levels) - 2, -1, -1):
            self.strides[j] = self.strides[j + 1] * self.n_levels[j + 1]
        if candidates is None and space.enumerable:
            candidates = space.enumerate()
        if isinstance(candidates, pd.DataFrame):
            candidates = space.to_level_index(candidates)
        self.index: np.ndarray | None = None
        self.codes: np.ndarray | None = None
        if candidates is not None:
            index = np.asarray(candidates, dtype=np.int64).reshape(-1, len(self.names))
            codes = self.encode(index)
            _, first = np.unique(codes, return_index=True)
            keep = np.sort(first)  # drop duplicate rows, keep the given order
            self.index, self.codes = index[keep], codes[keep]
            if not len(self.index):
                raise UserError("domain: no valid candidate configuration")
            order = np.argsort(self.codes, kind="stable")
            self._sorted_codes, self._sorted_pos = self.codes[order], order
        self.cache: dict[Hashable, Any] = {}

    # -- encodings -------------------------------------------------------------------------------
    @property
    def n_candidates(self) -> int | None:
        return None if self.index is None else len(self.index)

    def encode(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(index, dtype=np.int64) @ self.strides

    def decode(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        return (codes[:, None] // self.strides[None, :]) % self.n_levels[None, :]

    def positions(self, codes: np.ndarray) -> np.ndarray:
        """Candidate row of each code, -1 where a code is not a candidate."""
        if self.index is None:
            raise UserError("domain: this space has no candidate list")
        codes = np.asarray(codes, dtype=np.int64)
        at = np.searchsorted(self._sorted_codes, codes)
        at = np.minimum(at, len(self._sorted_codes) - 1)
        hit = self._sorted_codes[at] == codes
        return np.where(hit, self._sorted_pos[at], -1)

    def frame(self, index: np.ndarray) -> pd.DataFrame:
        return self.space.from_level_index(np.asarray(index, dtype=np.int64).reshape(-1, len(self.names)))

    def from_frame(self, frame: pd.DataFrame) -> np.ndarray:
        return self.space.to_level_index(frame)

    def level_values(self, j: int) -> np.ndarray:
        """Numeric values of factor ``j``'s levels (booleans as 0/1); NaN for categorical levels."""
        f = self.space.factors[j]
        if f.kind == "categorical":
            return np.full(f.n_levels, np.nan)
        return np.asarray(f.levels, dtype=float)

    # -- validity ----------------------------------------------------------------------------------
    def feasible(self, index: np.ndarray) -> np.ndarray:
        """Rows on the level grid that satisfy the space's constraints (what is known a priori)."""
        index = np.asarray(index, dtype=np.int64).reshape(-1, len(self.names))
        on_grid = cast(np.ndarray, ((index >= 0) & (index < self.n_levels)).all(axis=1))  # 2-D: one flag per row
        if not self.space.constraints or not on_grid.any():
            return on_grid
        safe = np.where(on_grid[:, None], index, 0)
        columns = {f.name: f.level_array()[safe[:, j]] for j, f in enumerate(self.space.factors)}
        ok: np.ndarray = on_grid & self.space.constraint_mask(columns, len(index))
        return ok

    def valid(self, index: np.ndarray) -> np.ndarray:
        """Known-valid rows: candidates when the domain has a list, else feasible rows."""
        index = np.asarray(index, dtype=np.int64).reshape(-1, len(self.names))
        ok = self.feasible(index)
        if self.index is not None and ok.any():
            ok[ok] = self.positions(self.encode(index[ok])) >= 0
        return ok

    def pool(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Candidate level indices: all of them when known, else ``size`` distinct random valid ones."""
        if self.index is not None:
            return self.index
        found: dict[int, None] = {}
        for _ in range(200):
            draw = rng.integers(0, self.n_levels, size=(max(4 * size, 1024), len(self.names)))
            for code in self.encode(draw[self.feasible(draw)]).tolist():
                found.setdefault(code, None)
            if len(found) >= size:
                break
        if not found:
            raise UserError("space: no valid configuration found by random sampling; relax the constraints")
        return self.decode(np.fromiter(found, dtype=np.int64, count=len(found))[:size])

    def random_valid(self, n: int, rng: np.random.Generator, exclude: set[int] | None = None) -> np.ndarray:
        """``n`` distinct valid configurations drawn uniformly (from the candidates when known)."""
        exclude = exclude or set()
        if self.index is not None:
            if exclude:
                assert self.codes is not None  # set with self.index
                free = np.flatnonzero([c not in exclude for c in self.codes.tolist()])
            else:
                free = np.arange(len(self.index))
            take = rng.choice(len(free), size=min(n, len(free)), replace=False)
            return self.index[free[take]]
        found: dict[int, None] = {}
        for _ in range(200):
            draw = rng.integers(0, self.n_levels, size=(max(4 * n, 256), len(self.names)))
            for code in self.encode(draw[self.feasible(draw)]).tolist():
                if code not in exclude:
                    found.setdefault(code, None)
            if len(found) >= n:
                break
        return self.decode(np.fromiter(found, dtype=np.int64, count=len(found))[:n])

    def nearest(self, row: np.ndarray, exclude: np.ndarray, rng: np.random.Generator, pool: int = 256) -> np.ndarray | None:
        """The valid configuration closest to ``row`` whose code is not in ``exclude`` (None when none is left):
        what a strategy measures instead of a suggestion it cannot use (invalid, or measured already), keeping to
        its intent. Distance: level steps over the factor's range for ordered factors, 0/1 for a categorical
        one; ties drawn at random. Without a candidate list, the closest of ``pool`` random valid ones."""
        if self.index is not None:
            assert self.codes is not None  # set with self.index
            options = self.index[~np.isin(self.codes, exclude)]
        else:
            options = self.random_valid(pool, rng, exclude=set(np.asarray(exclude).tolist()))
        if not len(options):
            return None
        steps = np.abs(options - np.asarray(row, dtype=np.int64)).astype(float)
        for j, f in enumerate(self.space.factors):
            steps[:, j] = steps[:, j] > 0 if f.kind == "categorical" else steps[:, j] / max(f.n_levels - 1, 1)
        distance = steps.sum(axis=1)
        closest = np.flatnonzero(distance <= distance.min() + 1e-12)
        chosen: np.ndarray = options[closest[rng.integers(len(closest))]]
        return chosen

    def describe(self) -> str:
        known = f"{self.n_candidates:,} candidates" if self.index is not None else "no candidate list"
        return f"{len(self.names)} factors, {self.space.size:,} configurations, {known}"

