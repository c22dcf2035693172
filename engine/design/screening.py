"""Two-level screening designs: Plackett–Burman and regular fractional factorials 2^(k−p).

Each factor is run at its lowest level (coded −1) and its highest level (+1), as in DLMT's
screening step (dlmt.md §2.1); booleans at false/true, categoricals at their first/last level.
A fractional factorial aliases effects through its *defining relation*; its resolution is the
length of the shortest word (III: main effects clear of each other, IV: also of two-factor
interactions, ...). Runs that violate a constraint are dropped and counted; the coded matrix of
the kept runs is returned, but balance and orthogonality then no longer hold exactly.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.design.hadamard import plackett_burman_matrix
from engine.design.result import DesignResult
from engine.design.source import CandidateTable, Source, as_source
from engine.errors import UserError
from engine.space.factors import Space

#: Largest number of generator sets compared exhaustively; beyond, generators are chosen greedily.
MAX_EXHAUSTIVE = 20_000
_GENERATOR = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(-?)\s*([A-Za-z_]\w*(?:\s*[*:]\s*[A-Za-z_]\w*)*)\s*$")


def _two_level(src: Source, coded: pd.DataFrame, kind: str, started: float, info: dict[str, Any]) -> DesignResult:
    """Map the coded ±1 factor columns to low/high levels, drop invalid runs, build the result."""
    values = {}
    for f in src.factors:
        low, high = f.levels[0], f.levels[-1]
        values[f.name] = np.where(coded[f.name].to_numpy() > 0, high, low)
    design = src.from_level_index(np.column_stack([f.index_of(values[f.name]) for f in src.factors]))
    valid = src.valid_mask(design)
    rows = tuple(int(r) for r in src.rows_of(design[valid])) if isinstance(src, CandidateTable) else None
    info = {**info, "dropped_invalid": int((~valid).sum())}
    return DesignResult(
        kind=kind,
        design=design[valid].reset_index(drop=True),
        seconds=time.perf_counter() - started,
        rows=rows,
        coded=coded[valid].reset_index(drop=True),
        info=info,
    )


def _run_order(frame: pd.DataFrame, seed: int | None) -> pd.DataFrame:
    """Standard order, or a random run order (as R's FrF2 does by default) when ``seed`` is given."""
    if seed is None:
        return frame
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)


def pb_runs(k: int) -> int:
    """Smallest Plackett–Burman size (a constructible multiple of 4) for ``k`` factors."""
    runs = 4 * math.ceil((k + 1) / 4)
    while plackett_burman_matrix(runs) is None:
        runs += 4
    return runs


def plackett_burman(source: Space | pd.DataFrame, runs: int | None = None, seed: int | None = None) -> DesignResult:
    """Plackett–Burman screening design: N runs (a multiple of 4 ≥ k+1) for the k factors, with the
    N−1−k spare columns named d1, d2, ... (their sums of squares estimate the error in the ANOVA)."""
    started = time.perf_counter()
    src = as_source(source)
    k = len(src.factors)
    runs = pb_runs(k) if runs is None else runs
    if runs < k + 1 or runs % 4:
        raise UserError(f"runs {runs}: a Plackett–Burman design for {k} factors needs a multiple of 4 >= {k + 1}")
    matrix = plackett_burman_matrix(runs)
    if matrix is None:
        raise UserError(f"runs {runs}: no Plackett–Burman construction of this size here; try {pb_runs(runs - 1)}")
    names = src.names + [f"d{i + 1}" for i in range(runs - 1 - k)]
    coded = _run_order(pd.DataFrame(matrix, columns=names), seed)
    return _two_level(src, coded, "pb", started, {"dummies": names[k:]})


# -- fractional factorials ---------------------------------------------------------------------------
def _words(generators: Sequence[int], m: int, signs: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """The defining relation: (bit mask, sign) of every product of the generator words."""
    signs = signs or [1] * len(generators)
    gen_words = [(mask | (1 << (m + j)), sign) for j, (mask, sign) in enumerate(zip(generators, signs))]
    words = []
    for r in range(1, len(gen_words) + 1):
        for combo in itertools.combinations(gen_words, r):
            word, sign = 0, 1
            for w, s in combo:
                word ^= w
                sign *= s
            words.append((word, sign))
    return words


def _pattern(words: Sequence[tuple[int, int]], k: int) -> tuple[int, ...]:
    """Word-length pattern (A_1, ..., A_k): how many words of each length."""
    counts = [0] * (k + 1)
    for w, _ in words:
        counts[w.bit_count()] += 1
    return tuple(counts[1:])


def _resolution(pattern: Sequence[int]) -> int | None:
    return next((i + 1 for i, count in enumerate(pattern) if count), None)


def _default_generators(m: int, p: int) -> list[int]:
    """Generators (bit masks over the m base factors) of maximum resolution, then minimum
    aberration (fewest shortest words): exhaustive when small, greedy otherwise."""
    choices = sorted((mask for mask in range(1, 1 << m) if mask.bit_count() >= 2), key=lambda x: (-x.bit_count(), x))
    if len(choices) < p:
        raise UserError(f"{m + p} factors do not fit in {1 << m} runs of a fractional factorial")

    def score(gens: Sequence[int]) -> tuple[int, ...]:
        return tuple(-c for c in _pattern(_words(gens, m), m + len(gens)))

    if math.comb(len(choices), p) <= MAX_EXHAUSTIVE:
        best = max(itertools.combinations(choices, p), key=score)  # not inside list(): mypy infers from that context
        return list(best)
    chosen: list[int] = []
    for _ in range(p):
        chosen.append(max((c for c in choices if c not in chosen), key=lambda c: score(chosen + [c])))
    return chosen


def _parse_generators(texts: Sequence[str], names: list[str]) -> tuple[list[str], dict[str, tuple[int, list[str]]]]:
    """``["x5 = x1*x2*x3", "x6 = -x1:x2"]`` → (base factor names, {generated: (sign, base names)})."""
    generated: dict[str, tuple[int, list[str]]] = {}
    for text in texts:
        match = _GENERATOR.match(text)
        if not match:
            raise UserError(f"generator {text!r}: expected 'factor = a*b*c' (factor names, '*' or ':')")
        target, minus, product = match.groups()
        parts = [s.strip() for s in re.split(r"[*:]", product)]
        for name in [target, *parts]:
            if name not in names:
                raise UserError(f"generator {text!r}: unknown factor {name!r}")
        if target in generated or target in parts or len(set(parts)) != len(parts):
            raise UserError(f"generator {text!r}: each generated factor once, not in its own product")
        generated[target] = (-1 if minus else 1, parts)
    base = [n for n in names if n not in generated]
    for text, (_, parts) in zip(texts, generated.values()):
        if any(p in generated for p in parts):
            raise UserError(f"generator {text!r}: a product may use only base (not generated) factors")
        if len(parts) < 2:
            raise UserError(f"generator {text!r}: a single factor aliases two main effects; use a product")
    return base, generated


def fractional_factorial(
    source: Space | pd.DataFrame,
    runs: int | None = None,
    generators: Sequence[str] | None = None,
    seed: int | None = None,
) -> DesignResult:
    """Regular 2^(k−p) design. ``generators`` such as ``["x5 = x1*x2*x3"]`` fix the aliasing;
    without them, the best (resolution, then aberration) generators for ``runs`` are chosen.
    Default ``runs``: the smallest power of two ≥ k+1 (resolution III). ``info`` reports the
    generators, the defining relation and the resolution (None for a full factorial)."""
    started = time.perf_counter()
    src = as_source(source)
    names = src.names
    k = len(names)
    if generators:
        base, generated = _parse_generators(list(generators), names)
        m = len(base)
        if runs is not None and runs != 1 << m:
            raise UserError(f"runs {runs}: {len(generated)} generators for {k} factors give {1 << m} runs")
    else:
        runs = 1 << max(1, math.ceil(math.log2(k + 1))) if runs is None else runs
        if runs < 2 or runs & (runs - 1):
            raise UserError(f"runs {runs}: a 2-level fractional factorial needs a power of two")
        m = min(k, int(math.log2(runs)))
        if runs > 1 << k:
            raise UserError(f"runs {runs}: more than the {1 << k} runs of the full 2^{k} factorial")
        base = names[:m]
        masks = _default_generators(m, k - m) if k > m else []
        generated = {
            names[m + j]: (1, [base[b] for b in range(m) if mask >> b & 1]) for j, mask in enumerate(masks)
        }
    # Base columns in standard (Yates) order: the first base factor alternates fastest.
    grid = (np.arange(1 << m)[:, None] >> np.arange(m)[None, :]) & 1
    columns = {name: 2 * grid[:, b] - 1 for b, name in enumerate(base)}
    for name, (sign, parts) in generated.items():
        columns[name] = sign * np.prod([columns[p] for p in parts], axis=0)
    coded = _run_order(pd.DataFrame({n: columns[n] for n in names}), seed)
    position = {n: i for i, n in enumerate(base)}
    masks = [sum(1 << position[p] for p in parts) for _, parts in generated.values()]
    words = _words(masks, m, [sign for sign, _ in generated.values()])
    bit_names = base + list(generated)
    relation = [f"I = {'-' if sign < 0 else ''}" + "*".join(bit_names[b] for b in range(k) if w >> b & 1) for w, sign in words]
    return _two_level(
        src,
        coded,
        "fracfact",
        started,
        {
            "generators": [f"{n} = {'-' if s < 0 else ''}{'*'.join(p)}" for n, (s, p) in generated.items()],
            "defining_relation": relation,
            "resolution": _resolution(_pattern(words, k)),
            "word_length_pattern": list(_pattern(words, k)),
        },
    )
