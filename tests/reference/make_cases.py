"""Writes the synthetic data sets of cases/ (seeded, so a rerun writes the same files). Run by hand when a
case is added; `make reference` then computes R's values for them. The SPAPT-like ones are kept as written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CASES = Path(__file__).parent / "cases"


def collision(rng: np.random.Generator) -> pd.DataFrame:
    """Columns named like the engine's own formula code (``C``, ``contr``), an unbalanced 3x2 layout."""
    n = 30
    d = pd.DataFrame({"C": rng.choice(list("abc"), n), "contr": rng.normal(size=n).round(3),
                      "f": rng.choice(["s", "t"], n)})
    d["y"] = (3 + d["contr"] + 2 * (d["C"] == "b") + 1.5 * (d["f"] == "t") * (d["C"] != "a")
              + rng.normal(size=n) * 0.5).round(4)
    return d


def functions(rng: np.random.Generator) -> pd.DataFrame:
    """One column per whitelisted function, each in that function's domain."""
    n = 24
    d = pd.DataFrame({name: rng.uniform(0.5, 4.0, n).round(3) for name in ("x1", "x2", "x3", "x4", "x5")})
    d["x6"] = rng.uniform(-3.0, 3.0, n).round(3)
    d["y"] = (np.log(d.x1) + np.sqrt(d.x5) + 0.2 * np.exp(d.x4) + np.abs(d.x6) + rng.normal(size=n) * 0.3).round(4)
    return d


def aliased(rng: np.random.Generator) -> pd.DataFrame:
    """x3 = x1 + 2·x2 exactly, and an empty cell of f×g: aliased coefficients in a main effect and in an
    interaction."""
    rows = [(f, g) for f in "pqr" for g in "uv" if (f, g) != ("r", "v")] * 5
    d = pd.DataFrame(rows, columns=["f", "g"])
    d["x1"] = rng.integers(1, 9, len(d))
    d["x2"] = rng.integers(1, 9, len(d))
    d["x3"] = d["x1"] + 2 * d["x2"]
    d["y"] = (1 + 0.5 * d.x1 - 0.3 * d.x2 + (d.f == "q") + 0.7 * (d.g == "v") + rng.normal(size=len(d)) * 0.4).round(4)
    return d


def no_intercept(rng: np.random.Generator) -> pd.DataFrame:
    """A factor with full dummy coding and no intercept: the columns span a constant, the formula has none."""
    n = 27
    d = pd.DataFrame({"f": rng.choice(["lo", "mid", "hi"], n), "x": rng.uniform(0, 10, n).round(3)})
    d["y"] = (5 + 2 * (d.f == "hi") + 0.3 * d.x + rng.normal(size=n)).round(4)
    return d


def booleans(rng: np.random.Generator) -> pd.DataFrame:
    """A logical factor written before a number in an interaction (R names it ``x:bTRUE``), a constant column."""
    n = 20
    d = pd.DataFrame({"x": rng.uniform(1, 5, n).round(3), "b": rng.choice([True, False], n), "k": 5.0})
    d["y"] = (2 + d.x + 1.2 * d.b * d.x + rng.normal(size=n) * 0.5).round(4)
    d["b"] = d["b"].map({True: "TRUE", False: "FALSE"})  # R reads these as logical ("True" stays a string)
    return d


def intercept_column(rng: np.random.Generator) -> pd.DataFrame:
    """A numeric column named ``Intercept``: a variable to R, apart from the intercept ``(Intercept)``."""
    n = 30
    d = pd.DataFrame({"Intercept": rng.uniform(0, 5, n).round(3), "x": rng.uniform(0, 5, n).round(3)})
    d["y"] = (1 + d.Intercept + 0.5 * d.Intercept**2 + d.x - 0.3 * d.Intercept * d.x + rng.normal(size=n)).round(4)
    return d


def reserved_names(rng: np.random.Generator) -> pd.DataFrame:
    """Columns named like constants or functions of numpy, formulaic or R (``np``, ``pi``, ``T``, ``inf``,
    ``center``, ``Q``), used as variables: R reads each as the column."""
    n = 30
    d = pd.DataFrame({name: rng.uniform(-2, 2, n).round(3) for name in ("np", "pi", "T", "inf", "center", "Q")})
    d["y"] = (d.np - 2 * d.pi + d["T"] * d.np + 0.5 * d["inf"] ** 2 + d.center + rng.normal(size=n) * 0.5).round(4)
    return d


def logical_factors(rng: np.random.Generator) -> pd.DataFrame:
    """A logical, two categorical factors and a number, for R's coding without an intercept (the first
    factor gets a column per level, also inside an interaction) and for its rule on interactions."""
    n = 36
    d = pd.DataFrame({"b": rng.choice([True, False], n), "f": rng.choice(["lo", "mid", "hi"], n),
                      "g": rng.choice(["u", "v"], n), "x": rng.uniform(0, 4, n).round(3)})
    d["y"] = (1 + 2 * d.b + (d.f == "hi") - 0.5 * d.x * (d.g == "v") + 0.7 * d.x * d.b
              + rng.normal(size=n) * 0.6).round(4)
    d["b"] = d["b"].map({True: "TRUE", False: "FALSE"})  # R reads these as logical
    return d


def tiny_p(rng: np.random.Generator) -> pd.DataFrame:
    """A close fit on (40, 194) df: the overall F test's p is about 1e-298, where scipy's ``f.sf`` (both
    df even) is per cents off R's ``pf``."""
    levels = [f"l{i:02d}" for i in range(39)]
    f = [*np.repeat(levels, 6), levels[0]]
    n = len(f)
    d = pd.DataFrame({"f": f, "x1": rng.uniform(0, 1, n).round(3), "x2": rng.uniform(0, 1, n).round(3)})
    effect = dict(zip(levels, rng.normal(size=len(levels))))
    d["y"] = (d.f.map(effect) + 3 * d.x1 - 2 * d.x2 + rng.normal(size=n) * 0.034).round(6)
    return d


if __name__ == "__main__":
    for seed, make in enumerate((collision, functions, aliased, no_intercept, booleans, intercept_column,
                                 reserved_names, logical_factors, tiny_p), start=12):
        make(np.random.default_rng(seed)).to_csv(CASES / f"{make.__name__}.csv", index=False)
        print("wrote", make.__name__)
