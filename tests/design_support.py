"""Candidate sets and formulas of the R reference cases, shared by the design tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

TOY_FORMULA = "~ x1 + x3 + x5 + x7 + x8 + I(x8^2) + x1:x3"
QUAD = "~ " + " + ".join(f"x{i}" for i in range(1, 9)) + " + " + " + ".join(f"I(x{i}^2)" for i in range(1, 9))
FULL2 = "~ (" + " + ".join(f"x{i}" for i in range(1, 9)) + ")^2 + " + " + ".join(f"I(x{i}^2)" for i in range(1, 9))
LAPLACIAN = (
    "~ y_component_number + I(1/y_component_number) + vector_length + lws_y + I(1/lws_y) + load_overlap"
    " + temporary_size + elements_number + I(1/elements_number) + threads_number + I(1/threads_number)"
)


def toy_candidates(reference: Path) -> pd.DataFrame:
    """R's expand.grid(x1, x3, x5, x7, x8) over the exact seq(-1, 1, 0.2) doubles, x1 fastest."""
    case = json.loads((reference / "r_stats" / "toy_dopt.json").read_text())
    levels = np.array(case["candidates"]["levels"])
    index = np.indices((11,) * 5).reshape(5, -1).T[:, ::-1]
    return pd.DataFrame(levels[index], columns=["x1", "x3", "x5", "x7", "x8"])


def grid_8f(data: Path, name: str) -> pd.DataFrame:
    """An optfederov_bench candidate file: level indices 0..10 → values −1 + 0.2·index."""
    return -1 + 0.2 * pd.read_csv(data / "optfederov_bench" / name)
