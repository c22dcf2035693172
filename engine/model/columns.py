"""Model matrices over level-index rows, fast enough to rebuild inside every benchmark search.

The model-based strategies (LM, DOPT, DLMT) fit and predict R-style models whose terms are the ones
the term builder offers (:mod:`engine.model.choice`): ``x``, ``I(x^2)``, ``I(x^3)``, ``I(1/x)`` and
products ``a:b``. Each term column is a function of the level indices, so it is a table lookup per
factor; columns over a domain's candidates are cached once per process and a design's model matrix
is a row gather. Coding follows R's ``model.matrix`` on raw values (booleans as the 0/1 ``xTRUE``
dummy, categorical factors as treatment dummies). ``coding="index"`` uses level indices instead of
values, as Orio's DLMT does (its inverse terms become ``1/(1e-6 + index)``, docs/dlmt.md §5.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import UserError
from engine.model.terms import Part, term_parts
from engine.model.terms import term_name as term_name  # re-exported: the strategies import it here

if TYPE_CHECKING:  # only annotations: engine.strategies imports this module
    from engine.strategies.domain import Domain

CODINGS = ("raw", "index")
_INDEX_EPS = 1e-6


@dataclass(frozen=True)
class TermSpec:
    """A term as (factor, power) parts; power 1, 2, 3 or -1 (inverse); several parts = interaction."""

    name: str
    parts: tuple[Part, ...]

    @property
    def factors(self) -> frozenset[str]:
        return frozenset(f for f, _ in self.parts)


def parse_term(term: str, names: Sequence[str]) -> TermSpec:
    """``"I(lws_y^2)"`` -> TermSpec; only the term builder's kinds are accepted (:mod:`engine.model.terms`)."""
    return TermSpec(term, term_parts(term, names))


class TermColumns:
    """Model-matrix columns of terms over a domain, with the candidates' columns cached."""

    def __init__(self, domain: Domain, coding: str = "raw") -> None:
        if coding not in CODINGS:
            raise UserError(f"coding {coding!r} must be one of {', '.join(CODINGS)}")
        self.domain = domain
        self.coding = coding
        self._position = {name: j for j, name in enumerate(domain.names)}
        self._tables: dict[tuple[str, int], np.ndarray] = {}

    @classmethod
    def shared(cls, domain: Domain, coding: str = "raw") -> TermColumns:
        """One instance per (domain, coding), kept in the domain's cache."""
        key = ("term_columns", coding)
        if key not in domain.cache:
            domain.cache[key] = cls(domain, coding)
        shared: TermColumns = domain.cache[key]
        return shared

    def _level_table(self, factor: str, power: int) -> np.ndarray:
        """Per level: the column value(s) of ``factor`` raised to ``power`` (levels × columns)."""
        key = (factor, power)
        if key not in self._tables:
            j = self._position[factor]
            f = self.domain.space.factors[j]
            if f.kind == "categorical":
                if power != 1:
                    raise UserError(f"model term on '{factor}': a categorical factor has no powers or inverse")
                table = np.eye(f.n_levels)[:, 1:]  # treatment dummies, first level is the baseline
            else:
                base = np.arange(f.n_levels, dtype=float) if self.coding == "index" else self.domain.level_values(j)
                if power == -1:
                    base = base + _INDEX_EPS if self.coding == "index" else base
                    if np.any(base == 0):
                        raise UserError(f"model term I(1/{factor}): a level of '{factor}' is 0")
                    table = (1.0 / base)[:, None]
                else:
                    table = (base**power)[:, None]
            self._tables[key] = table
        return self._tables[key]

    def width(self, term: TermSpec) -> int:
        return int(np.prod([self._level_table(f, p).shape[1] for f, p in term.parts]))

    def term(self, term: TermSpec, index: np.ndarray) -> np.ndarray:
        """Columns of one term for level-index rows ``index`` (rows × width)."""
        out: np.ndarray | None = None
        for factor, power in term.parts:
            part = self._level_table(factor, power)[index[:, self._position[factor]]]
            out = part if out is None else (out[:, :, None] * part[:, None, :]).reshape(len(index), -1)
        assert out is not None, "a term has at least one part"
        return out

    def candidate_term(self, term: TermSpec) -> np.ndarray:
        """Columns of one term over all candidates (cached)."""
        key = ("candidate_term", self.coding, term.parts)
        cache = self.domain.cache
        if key not in cache:
            assert self.domain.index is not None, "candidate columns need a domain with candidates"
            cache[key] = np.ascontiguousarray(self.term(term, self.domain.index))
        columns: np.ndarray = cache[key]
        return columns

    def matrix(self, terms: Sequence[TermSpec], index: np.ndarray | None = None, rows: np.ndarray | None = None) -> tuple[np.ndarray, list[slice]]:
        """Intercept + terms, for level-index rows ``index`` or for candidate positions ``rows``."""
        blocks, slices, start = [], [], 1
        if index is not None:
            n = len(index)
        else:
            assert rows is not None, "matrix: give level-index rows or candidate positions"
            n = len(rows)
        for term in terms:
            block = self.term(term, index) if index is not None else self.candidate_term(term)[rows]
            blocks.append(block)
            slices.append(slice(start, start + block.shape[1]))
            start += block.shape[1]
        return np.column_stack([np.ones(n), *blocks]) if blocks else np.ones((n, 1)), slices
