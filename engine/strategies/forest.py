"""Forest picks: extremely randomised trees fitted to everything a strategy measured propose its next configuration.

Why trees, where a strategy already has DLMT's linear model and BO's GP: on Kernel Tuner spaces the good levels of a
factor are often not in order (block sizes that are powers of two among multiples of 16) and factors act through
each other (a work-group size and the vector width that must divide it). A linear model in the level values and a
smooth GP both average those patterns away; a tree splits on them. Each pick fits ``trees`` trees to the log of
the objective and takes, among at most ``candidates`` unmeasured valid configurations drawn afresh, the one with the
lowest lower bound: the trees' mean less ``kappa`` × their spread, so configurations unlike anything measured get
their chance (``kappa`` 0 exploits only: on convolution A6000 it reached within 5% of the optimum in 55% of 20 runs
of budget 200, against 80–100% for 0.5–2). Ties, frequent among trees, are broken at random: the first candidate
of the list would bias the search towards low level indices.

Features: each varying factor's level index, and one indicator per level for a factor of more than two levels
(trees can then split off any one level, not only a threshold). Failed configurations are never proposed again
but stay out of the fit: entered at the worst value measured (BO's ``penalty``) they pushed the picks away from the
large blocks next to which the best convolution A6000 configurations lie (median measurements to within 5% of the
optimum 99 against 82.5, 30 runs of budget 200).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.strategies.base import Strategy
from engine.strategies.domain import Domain


@dataclass(frozen=True)
class ForestSettings:
    """How a forest pick is made (the module docstring says why)."""

    trees: int = 30
    kappa: float = 1.0
    candidates: int = 2000
    max_features: float = 0.6


def preload() -> None:
    """Import scikit-learn's trees in a background thread: the import takes about 2 CPU-s, and a search that hands
    over to the forest only after its designs would otherwise pay it between two rounds of measurements, every
    worker idle (batch tuning on 8 workers lost 1.4 s of a 6.5 s run to it)."""
    import importlib
    import threading

    if "sklearn.tree" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("sklearn.tree",), name="preload-sklearn", daemon=True).start()


def tree_features(domain: Domain, index: np.ndarray) -> np.ndarray:
    """Rows of level indices as tree features: the level index of every factor that varies, and one indicator
    column per level of a factor with more than two levels."""
    parts = [np.zeros((len(index), 0))]
    for j, count in enumerate(domain.n_levels):
        if count < 2:
            continue
        parts.append(index[:, j, None].astype(float))
        if count > 2:
            parts.append((index[:, j, None] == np.arange(count)).astype(float))
    return np.hstack(parts)


def fit_trees(features: np.ndarray, y: np.ndarray, settings: ForestSettings, seed: int) -> list[Any]:
    """The trees of scikit-learn's ``ExtraTreesRegressor(n_estimators=trees, max_features=max_features,
    random_state=seed)``, the same trees, built one by one: the ensemble's wrapper cloned each tree through
    ``inspect.signature``, validated its parameters and checked its input once per tree, two thirds of AUTO's CPU
    on a 200-measurement run."""
    from sklearn import config_context
    from sklearn.tree import ExtraTreeRegressor

    draws = np.random.RandomState(seed)  # the ensemble's draw of each tree's seed, in the same order
    x = np.ascontiguousarray(features, dtype=np.float32)
    target = np.ascontiguousarray(y, dtype=np.float64)
    trees = []
    with config_context(skip_parameter_validation=True):  # the settings are checked once, as strategy options
        for _ in range(settings.trees):
            tree = ExtraTreeRegressor(max_features=settings.max_features,
                                      random_state=draws.randint(np.iinfo(np.int32).max))
            trees.append(tree.fit(x, target, check_input=False))
    return trees


def predict_trees(trees: Sequence[Any], features: np.ndarray) -> np.ndarray:
    """Each tree's predictions (trees × rows), read from the fitted tree structures without re-checking the input
    once per tree."""
    x = np.ascontiguousarray(features, dtype=np.float32)
    return np.stack([tree.tree_.predict(x).reshape(len(x)) for tree in trees])


class ForestPicker:
    """Proposes, one at a time, the unmeasured candidate of lowest lower bound under trees fitted to what
    ``strategy`` has measured (None once every candidate is measured)."""

    def __init__(self, domain: Domain, cand: np.ndarray, settings: ForestSettings = ForestSettings()) -> None:
        self.domain, self.cand, self.settings = domain, cand, settings
        self.codes = domain.encode(cand)
        self.feats = tree_features(domain, cand).astype(np.float32)  # once: a pick only scores rows of it

    def pick(self, strategy: Strategy) -> np.ndarray | None:
        measured, loss = strategy.measured()
        tried, _ = strategy.measured(ok_only=False)
        open_rows = np.flatnonzero(~np.isin(self.codes, tried))
        if not len(open_rows):
            return None
        if len(loss) < 2:
            chosen: np.ndarray = self.cand[open_rows[strategy.rng.integers(len(open_rows))]]
            return chosen
        y = np.log(loss) if np.all(loss > 0) else loss
        s = self.settings
        trees = fit_trees(tree_features(self.domain, self.domain.decode(measured)), y, s,
                          int(strategy.rng.integers(1 << 31)))
        if len(open_rows) > s.candidates:
            open_rows = strategy.rng.choice(open_rows, size=s.candidates, replace=False)
        per_tree = predict_trees(trees, self.feats[open_rows])
        bound = per_tree.mean(axis=0) - s.kappa * per_tree.std(axis=0)
        tied = np.flatnonzero(bound <= bound.min() + 1e-12)
        chosen = self.cand[open_rows[tied[strategy.rng.integers(len(tied))]]]
        return chosen
