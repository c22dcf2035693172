"""D-optimal rows over a prebuilt candidate model matrix, tuned for strategies that build thousands.

The exchange is engine.design's (:func:`engine.design.optimal_rows`, Fedorov with a working set);
this module only sets what a strategy step needs: few random starts and no polishing, since the
candidate sets are Orio-sized samples (``pool × trials`` rows, docs/dlmt.md §5.2) and the step's
design is refitted and revised at the next step anyway.

:func:`estimable_terms` is R's aliasing rule on the candidates, which also does Orio's "cleaning"
(a factor left with one level, or ``I(x^2)`` of one left with two, cannot be estimated).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.design import optimal_rows
from engine.design.model import estimable_columns

#: Polishing rounds per random start: strategies trade the last percent of D for speed.
POLISH = 0


def estimable_terms(X: np.ndarray, slices: Sequence[slice]) -> list[int]:
    """Indices of the terms with at least one column not aliased on these rows (R's rule, in order)."""
    kept = set(estimable_columns(X).tolist())
    return [t for t, sl in enumerate(slices) if any(c in kept for c in range(sl.start, sl.stop))]


def doptimal_rows(
    X: np.ndarray,
    n: int,
    *,
    forced: np.ndarray | None = None,
    rng: np.random.Generator,
    repeats: int = 1,
) -> np.ndarray:
    """Row positions of X in a D-optimal design of ``n`` rows (``forced`` rows included, first;
    just those when they already fill ``n`` or leave no other row)."""
    forced = np.unique(np.asarray(forced if forced is not None else [], dtype=np.int64))
    trials = min(n - len(forced), len(X) - len(forced))
    if trials < 1:
        return forced
    return optimal_rows(X, trials, forced=forced, repeats=max(1, repeats), seed=rng, polish=POLISH)
