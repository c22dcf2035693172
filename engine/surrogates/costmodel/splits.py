"""Program-grouped splits (costmodel.md §1.4): the kernels of one program share shapes and opcodes, so a random
split by graph would let a model see a near-copy of every test kernel in training. Every split here keeps all
graphs of a program on one side; which programs go where is shuffled by a seed, so folds are reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.errors import UserError, brief
from engine.surrogates.costmodel.graph import TensorGraph

Fold = tuple[np.ndarray, np.ndarray]


def _programs(graphs: Sequence[TensorGraph], seed: int) -> list[np.ndarray]:
    """The graph indices of every program, programs in a seeded random order."""
    if not isinstance(seed, int | np.integer):
        raise UserError(f"seed must be an integer, got {brief(seed)}")
    names = np.array([graph.program for graph in graphs], dtype=object)
    programs = sorted(set(names))
    if len(programs) < 2:
        raise UserError(f"a program-grouped split needs graphs of at least 2 programs, got {len(programs)} ({brief(programs)})")
    order = np.random.default_rng(seed).permutation(len(programs))
    return [np.flatnonzero(names == programs[i]) for i in order]


def group_folds(graphs: Sequence[TensorGraph], k: int = 5, seed: int = 0) -> list[Fold]:
    """``k`` (train, test) index pairs, each program in exactly one test fold; ``k`` is capped at the number of
    programs. Programs go, largest first (ties in seeded order), to the fold with the fewest graphs so far,
    as scikit-learn's GroupKFold balances them, but with a seeded shuffle."""
    if not isinstance(k, int | np.integer) or k < 2:
        raise UserError(f"k must be an integer ≥ 2, got {brief(k)}")
    groups = _programs(graphs, seed)
    k = min(int(k), len(groups))
    members: list[list[np.ndarray]] = [[] for _ in range(k)]
    sizes = np.zeros(k, int)
    for group in sorted(groups, key=len, reverse=True):  # a stable sort keeps the seeded order among equals
        fold = int(np.argmin(sizes))
        members[fold].append(group)
        sizes[fold] += len(group)
    every = np.arange(len(graphs))
    tests = [np.sort(np.concatenate(fold)) for fold in members]
    return [(np.setdiff1d(every, test), test) for test in tests]


def first_programs(graphs: Sequence[TensorGraph], count: int) -> list[TensorGraph]:
    """The graphs of the first ``count`` programs in name order: a data set as it stood when it held ``count``
    programs (a resumable generator names programs in the order it makes them), so a figure quoted on that
    prefix stays reproducible as the data set grows."""
    if not isinstance(count, int | np.integer) or count < 1:
        raise UserError(f"programs must be an integer ≥ 1, got {brief(count)}")
    kept = set(sorted({graph.program for graph in graphs})[:int(count)])
    return [graph for graph in graphs if graph.program in kept]


def config_folds(graph: TensorGraph, k: int = 5, seed: int = 0) -> list[Fold]:
    """``k`` (train, test) splits of one graph's *configurations*, seeded: the only held-out test a single program
    allows (a layout module's configurations). Weaker than a program split, and reported as such."""
    if not isinstance(k, int | np.integer) or k < 2:
        raise UserError(f"k must be an integer ≥ 2, got {brief(k)}")
    runs = len(graph.runtime)
    if runs < 2 * k:
        raise UserError(f"graph {graph.name!r}: {runs} configurations cannot make {k} folds of at least 2")
    order = np.random.default_rng(seed).permutation(runs)
    return [(np.sort(np.setdiff1d(order, test)), np.sort(test)) for test in np.array_split(order, int(k))]


def train_val_test(graphs: Sequence[TensorGraph], seed: int = 0,
                   fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graph indices of training, validation and test programs. ``fractions`` are shares of the *programs*
    (rounded, at least one program for a nonzero share), since a program is the unit a model must generalise to."""
    shares = _fractions(fractions)
    groups = _programs(graphs, seed)
    val, test = (max(1, round(share * len(groups))) if share > 0 else 0 for share in shares[1:])
    if val + test >= len(groups):
        raise UserError(f"fractions {brief(fractions)} leave no training program among the {len(groups)} programs")
    parts = np.split(np.arange(len(groups)), [len(groups) - val - test, len(groups) - test])
    train, validation, testing = (np.sort(np.concatenate([groups[i] for i in part] or [np.empty(0, int)])) for part in parts)
    return train, validation, testing


def _fractions(fractions: tuple[float, float, float]) -> np.ndarray:
    try:
        shares = np.asarray(fractions, dtype=float) if np.ndim(fractions) == 1 else np.empty(0)
    except (TypeError, ValueError):
        shares = np.empty(0)
    if len(shares) != 3 or not np.isfinite(shares).all() or (shares < 0).any() or shares[0] <= 0 or abs(shares.sum() - 1) > 1e-9:
        raise UserError(f"fractions must be three shares (train > 0, validation, test ≥ 0) summing to 1, got {brief(fractions)}")
    return shares
