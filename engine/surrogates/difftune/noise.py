"""How far measured block throughputs can be trusted: a run's noise figure, and the robust statistic per block
(from a ``tunelab blocks export`` file, :func:`read_measured`).

A loaded machine inflates the *median* of a block's repetitions long before it moves their *minimum*: on a busy
2-core VM two passes' medians differed by 7–10% MAPE while their minima differed by 2.7–3.6% (issue 33), yet on a
quiet machine the median is the steadier one (1.2% against 1.7% between passes, data/difftune/README.md). So:

* :func:`run_noise` sums up one ``blocks measure`` run: the median, over its blocks, of how far the median of the
  repetitions sits above their minimum (the *gap*), the share of repetitions kept (a context switch or page fault
  rejects one), the blocks whose batch the calibration found disturbed, and against an earlier pass, the MAPE of
  the medians and of the minima. Its ``busy`` verdict names what exceeded its limit.
* :func:`robust_truth` gives each block one value. From three passes on, the median of the passes' minima: on a
  shared VM (amd-25-1-1) a busy neighbour slows a block's *whole* run, every repetition of it, by up to 2×, so a
  pass's minimum is no defence and the smallest minimum over passes is one pass's freak; the median over passes
  outvotes the disturbed passes (24 passes split 12/12: 0.93% MAPE between the halves' truths; 6/6 2.3%, 3/3 8.6%;
  the smallest minimum of 6 passes against the other 6's 8.4%: data/difftune/README.md). With one or two passes,
  the median where the block's measurements agree (two passes' medians within :data:`GATE` of each other; with one
  pass, its median within :data:`GATE` of its minimum), else the smallest minimum. The block's noise is beside it,
  so that evaluations never read a disturbed value.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.io.table_import import read_bytes, unquote_frame

#: A block's measurements agree when its medians (two passes), or its median and minimum (one pass), differ by at
#: most this fraction: 97% of the quiet Intel set's blocks were within 5% between passes (data/difftune/README.md).
GATE = 0.05
#: From this many ok passes on, a block's value is the median of its passes' minima (a vote: see the module's doc).
VOTING_PASSES = 3
#: A run is too busy to trust when the median gap of its blocks exceeds this (a quiet pass: see data/difftune/README.md).
GAP_LIMIT = 0.02
#: ... or when fewer of its repetitions than this were clean (not interrupted), or more of its blocks than this share
#: were in disturbed batches.
KEPT_LIMIT = 0.95
NOISY_LIMIT = 0.01


@dataclass(frozen=True)
class RunNoise:
    """One measuring run's noise figure (fractions, not percent) and whether it can be trusted."""

    blocks: int
    gap: float
    kept: float
    noisy: int
    pass_mape_median: float | None = None
    pass_mape_min: float | None = None
    compared: int = 0
    reasons: tuple[str, ...] = field(default=())

    @property
    def busy(self) -> bool:
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons), "busy": self.busy}

    def summary(self) -> str:
        """One line: the figure, and the warning when there is one."""
        text = (f"noise: median gap {self.gap:.2%} between the median and the minimum of a block's repetitions "
                f"(limit {GAP_LIMIT:.0%}), {self.kept:.1%} of repetitions clean, {self.noisy} blocks in disturbed batches")
        if self.pass_mape_median is not None:
            text += (f"; against pass 1 ({self.compared:,} blocks): MAPE {self.pass_mape_median:.2%} of the medians, "
                     f"{self.pass_mape_min:.2%} of the minima")
        if self.busy:
            text += (". WARNING: the machine was too busy to trust these timings (" + "; ".join(self.reasons) +
                     "): measure again on a quiet machine, or measure more passes: from 3 on, each block's truth is "
                     "the median of its passes' minima, which outvotes the disturbed ones (blocks in disturbed "
                     "batches are measured again on the next run)")
        return text


def run_noise(results: pd.DataFrame, repeats: int, first_pass: pd.DataFrame | None = None) -> RunNoise:
    """The noise figure of ``results`` (:func:`engine.surrogates.difftune.measure.measure`'s rows of one run, each
    unroll timed ``repeats`` times, the first dropped) and, when given, its agreement with ``first_pass`` (rows with
    ``hex``, ``status``, ``cycles_min``, ``cycles_median`` of the same CPU's pass 1)."""
    ok = results[results["status"] == "ok"]
    minima = ok["cycles100"].to_numpy(float)
    medians = ok["cycles100_median"].to_numpy(float)
    gaps = np.where(medians > 0, (medians - minima) / np.where(medians > 0, medians, 1.0), 0.0)
    gap = float(np.median(gaps)) if len(gaps) else math.nan
    clean = sum(len(a) + len(b) for a, b in zip(ok["clean_a"], ok["clean_b"]))
    kept = clean / (2 * max(1, repeats - 1) * len(ok)) if len(ok) else math.nan
    noisy = int((results["status"] == "noisy").sum())
    mape_median = mape_min = None
    compared = 0
    if first_pass is not None:
        earlier = first_pass[first_pass["status"] == "ok"].set_index("hex")
        both = ok[ok["hex"].isin(earlier.index)]
        compared = len(both)
        if compared:
            then = earlier.loc[both["hex"]]
            mape_median = _mape(both["cycles100_median"].to_numpy(float), then["cycles_median"].to_numpy(float))
            mape_min = _mape(both["cycles100"].to_numpy(float), then["cycles_min"].to_numpy(float))
    reasons = []
    if gap > GAP_LIMIT:
        reasons.append(f"median gap {gap:.2%} > {GAP_LIMIT:.0%}")
    if kept < KEPT_LIMIT:
        reasons.append(f"{kept:.1%} of repetitions clean < {KEPT_LIMIT:.0%}")
    if len(results) and noisy / len(results) > NOISY_LIMIT:
        reasons.append(f"{noisy} of {len(results)} blocks in disturbed batches")
    return RunNoise(len(ok), gap, kept, noisy, mape_median, mape_min, compared, tuple(reasons))


def _mape(got: np.ndarray, reference: np.ndarray) -> float:
    keep = reference > 0
    return float(np.mean(np.abs(got[keep] - reference[keep]) / reference[keep])) if keep.any() else math.nan


def pass_suffixes(columns: Sequence[str]) -> list[str]:
    """The passes a wide measurements table holds (``blocks export``): ``""`` for pass 1, ``"_p2"``, ..."""
    found = {match.group(1) or "" for c in columns if (match := re.fullmatch(r"cycles_median(_p\d+)?", c))}
    return sorted(found, key=lambda s: int(s[2:]) if s else 1)


def robust_truth(table: pd.DataFrame, gate: float = GATE) -> pd.DataFrame:
    """One value per block of a wide measurements table (``hex``, then ``status``, ``cycles_min``,
    ``cycles_median`` for pass 1 and the same with ``_p2``... for later passes): ``cycles``, ``statistic`` and
    ``noise``, ``passes`` (how many were ok). A block ok in three passes or more reads "median of minima" (noise: the
    median absolute deviation of its passes' minima over their median); a block ok once or twice reads the noise-gated
    "median" (noise: the passes' medians' spread over their mean; with one pass, the median's gap above the minimum),
    else the smallest "minimum". Blocks ok in no pass are left out."""
    suffixes = pass_suffixes(list(table.columns))
    if not suffixes:
        raise ValueError("a measurements table needs a cycles_median column")
    medians = np.stack([_ok_values(table, "cycles_median", s) for s in suffixes], axis=1)
    minima = np.stack([_ok_values(table, "cycles_min", s) for s in suffixes], axis=1)
    passes = np.sum(~np.isnan(medians), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": a block ok in no pass, dropped below
        centre = np.nanmean(medians, axis=1)
        smallest = np.nanmin(minima, axis=1)
        spread = np.where(passes >= 2, (np.nanmax(medians, axis=1) - np.nanmin(medians, axis=1)) / centre,
                          (centre - smallest) / centre)
        voted = np.nanmedian(minima, axis=1)
        deviation = np.nanmedian(np.abs(minima - voted[:, None]), axis=1) / voted
    agree = spread <= gate
    many = passes >= VOTING_PASSES
    out = pd.DataFrame({"hex": table["hex"].to_numpy(),
                        "cycles": np.where(many, voted, np.where(agree, centre, smallest)),
                        "statistic": np.where(many, "median of minima", np.where(agree, "median", "minimum")),
                        "noise": np.where(many, deviation, spread), "passes": passes})
    return out[(passes > 0) & (out["cycles"] > 0)].reset_index(drop=True)


def _ok_values(table: pd.DataFrame, column: str, suffix: str) -> np.ndarray:
    values: np.ndarray = pd.to_numeric(table[column + suffix], errors="coerce").to_numpy(float)
    status = table.get("status" + suffix)
    return values if status is None else np.where(status.to_numpy() == "ok", values, np.nan)


def half_truths(table: pd.DataFrame) -> pd.DataFrame:
    """Each block's :func:`robust_truth` from the odd passes (``odd``) and from the even ones (``even``), indexed by
    hex, for blocks both halves have: how far the truth itself moves, the noise ceiling of any predictor."""
    suffixes = pass_suffixes(list(table.columns))
    if len(suffixes) < 2:
        raise ValueError("the noise between halves needs two passes or more")
    halves = []
    for part in (suffixes[0::2], suffixes[1::2]):
        renamed = {f"{column}{old}": f"{column}{'' if i == 0 else f'_p{i + 1}'}"
                   for i, old in enumerate(part) for column in ("status", "cycles_min", "cycles_median")}
        halves.append(robust_truth(table[["hex", *renamed]].rename(columns=renamed)).set_index("hex")["cycles"])
    return pd.concat(halves, axis=1, keys=["odd", "even"]).dropna()


def read_measured(path: Path) -> pd.DataFrame:
    """A ``tunelab blocks export`` CSV (gzip too) as its wide table, checked: one line naming the file if not."""
    if not path.is_file():
        raise UserError(f"measured: {brief(str(path))} is not a file")
    try:  # bounded (gzip too), and a blocks export's text cells carry their spreadsheet quotes
        rows = unquote_frame(pd.read_csv(io.BytesIO(read_bytes(path, f"measured {path.name}")), dtype={"hex": str},
                                         low_memory=False))  # one pass of the columns: no mixed-type guesses
    except UserError:
        raise
    except ValueError as exc:
        raise UserError(f"measured {path.name}: not a CSV table ({' '.join(str(exc).split())[:120]})") from None
    missing = [c for c in ("hex", "status", "cycles_min", "cycles_median") if c not in rows.columns]
    if missing:
        raise UserError(f"measured: {brief(str(path))} has no column {missing[0]!r} (a tunelab blocks export CSV)")
    return rows
