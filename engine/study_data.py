"""A study's stored rows in the shapes the analysis wants: a fitting frame and a candidate set."""

from __future__ import annotations

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


def candidate_set(spec: StudySpec, table: pd.DataFrame | None = None, seed: int = 0) -> pd.DataFrame:
    """Where a model may look for the best configuration: the valid rows of a table study, the
    enumerated valid space, or a reproducible uniform sample of it when it is too large."""
    if table is not None and len(table):
        return table.loc[table["status"] == "ok", spec.space.names].reset_index(drop=True)
    if spec.space.enumerable:
        return spec.space.enumerate()
    return spec.space.sample(CANDIDATE_SAMPLE, seed=seed)


def initial_formula(spec: StudySpec, data: pd.DataFrame) -> str:
    """A first model a design can support: linear terms of the factors that vary in ``data``."""
    varying = [name for name in spec.space.names if data[name].nunique() > 1]
    return f"{spec.objective} ~ " + (" + ".join(varying) if varying else "1")
