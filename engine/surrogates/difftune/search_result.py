"""What a search for a simulator table returns, and the error it minimises: shared by greedy per-parameter
search and the calibration run as a tuning study, so their curves and costs compare like for like.

Cost is counted in simulator calls (one block under one table = 1 call): the unit that also measures
DiffTune's data set, whatever a method does with its calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import ParamTable


@dataclass(frozen=True)
class SearchResult:
    """The best table found, the simulator calls spent, and the curve: ``calls`` and ``mape`` (the best
    training MAPE so far) after each evaluation."""

    table: ParamTable
    calls: int
    history: pd.DataFrame


def check_problem(blocks: Sequence[Block], truth: np.ndarray, start: ParamTable) -> np.ndarray:
    """The truth as floats; refuses an empty or mismatched truth and a start without a row for a block's opcode."""
    values = np.asarray(truth, dtype=float)
    if not len(blocks) or values.shape != (len(blocks),):
        raise UserError(f"truth: {values.size} values for {len(blocks)} blocks")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise UserError(f"truth: every block needs a positive, finite cycle count, got {brief(values.min())}")
    missing = sorted({i.key for b in blocks for i in b.instructions} - set(start.rows))
    if missing:
        raise UserError(f"start: no row for {brief(missing[0])} ({len(missing)} opcodes missing)")
    return values


def check_budget(budget: int, first: int) -> int:
    """The budget as an int; refused when it cannot pay for the ``first`` evaluation (the start's)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < first:
        raise UserError(f"budget: {brief(budget)} simulator calls cannot pay for one evaluation ({first})")
    return int(budget)


def ape(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per-block absolute percentage error (a fraction), the terms of §5's MAPE."""
    errors: np.ndarray = np.abs(np.asarray(predicted, dtype=float) - truth) / truth
    return errors


def curve(calls: npt.ArrayLike, best: npt.ArrayLike) -> pd.DataFrame:
    """The history frame: calls spent and best MAPE so far, one row per evaluation."""
    return pd.DataFrame({"calls": np.asarray(calls, dtype=np.int64), "mape": np.asarray(best, dtype=float)})
