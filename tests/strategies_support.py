"""A small exhaustive table with a known optimum, holes (absent = invalid) and failed rows."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from engine.compare.replay import BenchTable
from engine.space.factors import Factor, Space
from engine.study import StudySpec

A = (1, 2, 4, 8, 16, 32)
B = (2, 3, 4, 5, 6, 7, 8, 9)
D = (1, 2, 3)
OPTIMUM = {"a": 8, "b": 3, "c": True, "d": 1}


def response(a, b, c, d) -> float:
    """Positive and multiplicative; DLMT's default model (a + 1/a, b + b², c, d) fits its log.
    Optimum 2.0 at a=8, b=3, c=True, d=1."""
    return (a / 8 + 8 / a) * (1.0 + 0.1 * (b - 3) ** 2) * (1.0 if c else 1.3) * (1.0 + 0.2 * (d - 1))


def small_frame() -> pd.DataFrame:
    rows = []
    for a, b, c, d in itertools.product(A, B, (False, True), D):
        if a * b > 128:  # a hole: absent from the table, i.e. invalid
            continue
        failed = (a, b, d) == (2, 5, 3)
        rows.append({"a": a, "b": b, "c": c, "d": d, "value": np.nan if failed else response(a, b, c, d),
                     "status": "failed" if failed else "ok", "error": "boom" if failed else None})
    return pd.DataFrame(rows)


def small_spec(name: str = "small") -> StudySpec:
    space = Space([Factor("a", "ordinal", A), Factor("b", "ordinal", B), Factor("c", "boolean", (False, True)),
                   Factor("d", "ordinal", D)])
    return StudySpec(name=name, space=space, objective="time")


def small_table() -> BenchTable:
    return BenchTable(small_spec(), small_frame(), "small")


def write_csv(path) -> None:
    frame = small_frame()
    frame = frame[frame["status"] == "ok"].drop(columns=["status", "error"]).rename(columns={"value": "time"})
    frame.to_csv(path, index=False)
