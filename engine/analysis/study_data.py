"""A study's stored rows in the shapes the analysis wants: a fitting frame and a candidate set."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.study import StudySpec

#: Candidates drawn from a space too large to enumerate (prediction and decisions run over them).
CANDIDATE_SAMPLE = 20_000


def analysis_frame(spec: StudySpec, measurements: pd.DataFrame) -> pd.DataFrame:
    """Successful measurements: one column per factor and the objective (named as in the spec)."""
    ok = measurements[measurements["status"] == "ok"]
    frame = ok[spec.space.names].copy()
    frame[spec.objective] = ok["value"].astype(float).to_numpy()
    return frame.reset_index(drop=True)


def candidate_set(spec: StudySpec, table: pd.DataFrame | None = None, seed: int = 0,
                  fixed: dict[str, Any] | None = None) -> pd.DataFrame:
    """Where a model may look for the best configuration: the valid rows of a table study, the
    enumerated valid space, or a reproducible uniform sample of it when it is too large — in each
    case with the ``fixed`` factors held at their levels (sampled within that sub-space)."""
    fixed = fixed or {}
    if table is not None and len(table):
        return restrict(table.loc[table["status"] == "ok", spec.space.names], fixed)
    space = spec.space.fix(fixed) if fixed else spec.space
    if space.enumerable:
        return space.enumerate()
    return space.sample(CANDIDATE_SAMPLE, seed=seed)


def candidates_sampled(spec: StudySpec, table: pd.DataFrame | None = None,
                       fixed: dict[str, Any] | None = None) -> bool:
    """Whether :func:`candidate_set` returns a sample (a huge space) rather than every valid configuration."""
    if table is not None and len(table):
        return False
    space = spec.space.fix(fixed) if fixed else spec.space
    return not space.enumerable


def initial_formula(spec: StudySpec, data: pd.DataFrame) -> str:
    """A first model a design can support: linear terms of the factors that vary in ``data``."""
    varying = [name for name in spec.space.names if data[name].nunique() > 1]
    return f"{spec.objective} ~ " + (" + ".join(varying) if varying else "1")


@dataclass(frozen=True)
class NextStep:
    """Where the decisions log leaves a study: factors fixed so far, the model to continue with, the step."""

    fixed: dict[str, Any]
    formula: str | None
    step: int


#: Outcomes that change the study: their fixes and models hold for the steps after them.
APPLIED = ("accepted", "edited", "auto")


def applied_rows(decisions: pd.DataFrame) -> pd.Series:
    """Which log rows still apply: accepted, edited or automatic, and not withdrawn since."""
    applied = decisions["outcome"].isin(APPLIED)
    if "withdrawn_at" in decisions:
        applied &= decisions["withdrawn_at"].isna()
    return applied


def last_applied(decisions: pd.DataFrame, kind: str | None = None) -> int | None:
    """The id of the latest decision that still applies (of ``kind``, when given), or None."""
    rows = decisions[applied_rows(decisions)] if len(decisions) else decisions
    if kind is not None and len(rows):
        rows = rows[rows["kind"] == kind]
    return int(rows["id"].iloc[-1]) if len(rows) else None


def next_step(decisions: pd.DataFrame) -> NextStep:
    """Fold the decisions log (``Store.decisions``): every accepted or edited decision fixes its factors
    (a later one overrides an earlier one) and hands its model to the next step; rejections change nothing."""
    fixed: dict[str, Any] = {}
    formula = None
    applied = decisions[applied_rows(decisions)] if len(decisions) else decisions
    for text in applied.get("chosen", pd.Series(dtype=object)):
        chosen = json.loads(text) if isinstance(text, str) else None
        if chosen:
            fixed.update(chosen.get("fix") or {})
            formula = chosen.get("formula") or formula
    return NextStep(fixed, formula, len(applied) + 1)


#: The decisions log as a person reads it (:func:`readable_log`), in this order.
LOG_COLUMNS = ("id", "step", "outcome", "by", "note", "fixed", "next model", "reasons", "when")


def readable_log(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decisions log (``Store.decisions``) without JSON: the fix as ``factor = level`` text, the
    next model, the person's note and the reasons one per line (blank where a decision has none)."""
    rows = []
    for record in decisions.to_dict("records"):
        chosen = json.loads(record["chosen"]) if isinstance(record.get("chosen"), str) else None
        fix = (chosen or {}).get("fix") or {}
        note = record.get("note")
        rows.append({
            "id": record["id"], "step": record.get("step"), "by": record["actor"],
            "outcome": record["outcome"] + (", withdrawn" if pd.notna(record.get("withdrawn_at")) else ""),
            "fixed": ", ".join(f"{k} = {v}" for k, v in fix.items()) if chosen else "",
            "next model": (chosen or {}).get("formula") or "",
            "note": note if isinstance(note, str) else "",
            "reasons": str(record.get("explanation") or ""),
            "when": str(record.get("created_at") or "")[:19],
        })
    return pd.DataFrame(rows, columns=list(LOG_COLUMNS))


def restrict(candidates: pd.DataFrame, fixed: Mapping[str, Any]) -> pd.DataFrame:
    """The candidates that agree with every fixed factor."""
    mask = np.ones(len(candidates), dtype=bool)
    for name, value in fixed.items():
        if name in candidates.columns:
            mask &= (candidates[name] == value).to_numpy()
    return candidates[mask].reset_index(drop=True)
