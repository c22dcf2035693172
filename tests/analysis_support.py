"""Shared helpers for the analysis tests: R fixtures, the Laplacian space, table comparison."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from engine.io.paths import data_dir, reference_dir

RTOL = 1e-9


def r_case(name: str) -> dict:
    """One JSON fixture of shared/reference/r_stats (skip when the folder is absent)."""
    folder = reference_dir()
    if folder is None or not (folder / "r_stats" / f"{name}.json").is_file():
        pytest.skip("R reference fixtures are absent")
    return json.loads((folder / "r_stats" / f"{name}.json").read_text())


def laplacian_space() -> pd.DataFrame:
    folder = data_dir()
    if folder is None or not (folder / "laplacian" / "search_space.csv").is_file():
        pytest.skip("Laplacian data set is absent")
    return pd.read_csv(folder / "laplacian" / "search_space.csv")


def r_name(term: str) -> str:
    """R's ``factor(x)`` is written ``C(x)`` in Tunelab formulas (same coding); R 4.2's ``read.csv`` kept the
    Laplacian's lowercase ``true``/``false`` as strings (dummy ``load_overlaptrue``), which Tunelab reads as
    booleans, R's logical (dummy ``load_overlapTRUE``)."""
    return re.sub(r"\b(load_overlap|vector_recompute)true\b", r"\1TRUE", term.replace("factor(", "C("))


def assert_table(ours: pd.DataFrame, rows: list[dict], columns: dict[str, str], rtol: float = RTOL) -> None:
    """Same row names in the same order, and each ``ours_column: r_column`` equal to ``rtol``."""
    theirs = pd.DataFrame(rows)
    assert list(ours["term"]) == [r_name(t) for t in theirs["term"]]
    for mine, r in columns.items():
        expected = theirs[r].astype(float).to_numpy()
        got = ours[mine].astype(float).to_numpy()
        finite = np.isfinite(expected)
        assert np.array_equal(finite, np.isfinite(got)), mine
        floor = 1e-12 * np.max(np.abs(expected[finite])) if finite.any() else 0.0
        np.testing.assert_allclose(got[finite], expected[finite], rtol=rtol, atol=floor, err_msg=mine)


def assert_stars(ours: pd.DataFrame, rows: list[dict]) -> None:
    assert [None if pd.isna(s) else s for s in ours["stars"]] == [r["stars"] for r in rows]


def toy_grid(levels: list[float]) -> pd.DataFrame:
    """R's ``expand.grid(x1, x3, x5, x7, x8)`` over the 11 stored levels (x1 fastest)."""
    lv = np.asarray(levels, dtype=float)
    r = np.arange(len(lv) ** 5)
    return pd.DataFrame({name: lv[(r // len(lv) ** i) % len(lv)] for i, name in enumerate(["x1", "x3", "x5", "x7", "x8"])})


ANOVA = {"Df": "Df", "Sum Sq": "Sum Sq", "Mean Sq": "Mean Sq", "F value": "F value", "Pr(>F)": "Pr(>F)"}
CAR = {"Df": "Df", "Sum Sq": "Sum Sq", "F value": "F value", "Pr(>F)": "Pr(>F)"}
COEF = {c: c for c in ("Estimate", "Std. Error", "t value", "Pr(>|t|)")}
