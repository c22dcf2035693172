"""What a user interface needs to offer designs: the list of design types and a size suggestion."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from engine.design.source import as_source
from engine.errors import UserError
from engine.model.formula import model_matrix
from engine.space.factors import Space


@dataclass(frozen=True)
class DesignType:
    """One generator: ``name`` is the CLI sub-command; ``params`` the options it takes."""

    name: str
    label: str
    summary: str
    needs_runs: bool
    needs_formula: bool
    params: tuple[str, ...]


_TYPES = (
    DesignType("factorial", "Full factorial", "Every valid configuration.", False, False, ("seed",)),
    DesignType("random", "Uniform random", "Distinct valid configurations drawn uniformly.", True, False, ("runs", "seed")),
    DesignType(
        "lhs", "Latin hypercube", "Maximin Latin hypercube over level indices; invalid points dropped.", True, False,
        ("runs", "seed", "tries"),
    ),
    DesignType(
        "pb", "Plackett–Burman", "Two-level screening of main effects in N runs (a multiple of 4).", False, False,
        ("runs", "seed"),
    ),
    DesignType(
        "fracfact", "Fractional factorial", "Two-level 2^(k−p) design with chosen or best generators.", False, False,
        ("runs", "generators", "seed"),
    ),
    DesignType(
        "dopt", "D-optimal", "Fedorov exchange over the valid configurations for a model formula.", True, True,
        ("runs", "formula", "repeats", "seed", "criterion", "forced"),
    ),
)

#: Size rules: "2k" = twice the number of coefficients (DLMT on the Laplacian); "orio" =
#: round(multiplier × terms) + extra (Orio's DLMT: 1.2 and 1, intercept not counted as a term).
SIZE_RULES = ("2k", "orio")


def design_types() -> list[DesignType]:
    return list(_TYPES)


def _level_frame(source: Space | pd.DataFrame) -> pd.DataFrame:
    """A few configurations in which every level of every factor appears (enough to count columns)."""
    src = as_source(source)
    longest = max(f.n_levels for f in src.factors)
    index = np.array([[i % f.n_levels for f in src.factors] for i in range(max(longest, 2))])
    return src.from_level_index(index)


def suggest_size(model: str | int, rule: str = "2k", data: Space | pd.DataFrame | None = None,
                 multiplier: float = 1.2, extra: int = 1) -> int:
    """Suggested number of runs for a model: a number of coefficients k (intercept included), or a
    formula with the ``data`` (space or candidates) that fixes how many columns each term has."""
    if rule not in SIZE_RULES:
        raise UserError(f"size rule {rule!r} must be one of {', '.join(SIZE_RULES)}")
    if isinstance(model, (int, np.integer)) and not isinstance(model, bool):
        if model < 1:
            raise UserError(f"coefficients {model} must be >= 1")
        k, terms = int(model), int(model) - 1
    elif data is None:
        raise UserError(f"formula {model!r}: give the space or candidates to count its coefficients")
    else:
        frame = _level_frame(data) if isinstance(data, Space) else data
        mm = model_matrix(cast(str, model), frame)  # a bool gets model_matrix's own refusal
        terms = len(mm.formula.terms)
        k = mm.k
    if rule == "2k":
        return 2 * k
    return math.floor(multiplier * terms + 0.5) + extra  # Orio's Python 2 round: half away from 0

