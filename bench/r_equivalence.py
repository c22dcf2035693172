"""Tunelab against R, class by class (issue 12): the largest relative error of each defect class's figures
on the cases of tests/reference, or what went wrong instead (a crash, other names, a table where car refuses).

    python bench/r_equivalence.py            # this checkout
    PYTHONPATH=/path/to/old/checkout python bench/r_equivalence.py --cases tests/reference   # an older engine

Reads R's values from tests/reference/r (written by ``make reference``); prints one line per class.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1] / "tests" / "reference"


def rel(ours: float, theirs: float | None) -> float:
    if theirs is None:
        return 0.0 if ours is None or not math.isfinite(ours) else math.inf
    if ours is None or not math.isfinite(ours):
        return math.inf
    return abs(ours - theirs) / max(abs(theirs), 1e-300)


def worst(pairs: list[tuple[float, float | None]]) -> float:
    return max((rel(a, b) for a, b in pairs), default=0.0)


def attempt(check: Callable[[], str]) -> str:
    try:
        return check()
    except Exception as exc:  # an old engine may crash: that is the finding
        return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:110]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=HERE)
    args = parser.parse_args()
    from engine.analysis import LinearModel, anova, coefficient_table, fit_summary

    cases = {row["name"]: row for row in csv.DictReader((args.cases / "cases.csv").open())}

    def fit(name: str) -> tuple[object, dict]:
        case = cases[name]
        model = LinearModel(case["formula"]).fit(pd.read_csv(args.cases / "cases" / case["data"]))
        return model, json.loads((args.cases / "r" / f"{name}.json").read_text())

    def table_error(name: str, typ: int) -> str:
        model, expected = fit(name)
        expected = expected[f"anova{typ}"]
        if "refused" in expected:
            try:
                anova(model, typ)
            except Exception as exc:
                return f"refused as car does ({str(exc).splitlines()[0][:70]}...)"
            return "a table where car refuses"
        table = anova(model, typ)
        rows = expected["rows"]
        if list(table["term"]) != [r["term"] for r in rows] or list(table["Df"]) != [r["df"] for r in rows]:
            return f"other rows: {list(zip(table['term'], table['Df']))} vs R {[(r['term'], r['df']) for r in rows]}"
        pairs = [(float(a), r[k]) for column, k in (("Sum Sq", "ss"), ("F value", "F"), ("Pr(>F)", "p"))
                 for a, r in zip(table[column], rows)]
        return f"max rel error {worst(pairs):.1e}"

    def summary_error(name: str) -> str:
        model, expected = fit(name)
        s, e = fit_summary(model), expected["summary"]
        if (s.f_numdf, s.f_dendf) != (e["f_numdf"], e["f_dendf"]):
            return f"F df ({s.f_numdf}, {s.f_dendf}) vs R ({e['f_numdf']}, {e['f_dendf']})"
        pairs = [(s.r_squared, e["r_squared"]), (s.adj_r_squared, e["adj_r_squared"]), (s.f_value, e["f_value"]),
                 (s.f_pvalue, e["f_p"])]
        return f"max rel error {worst(pairs):.1e}"

    def coefficient_error(name: str, columns: tuple[str, ...] = ("Std. Error",)) -> str:
        model, expected = fit(name)
        table, rows = coefficient_table(model), expected["coefficients"]
        if list(table["term"]) != [r["term"] for r in rows]:
            return f"other names: {list(table['term'])} vs R {[r['term'] for r in rows]}"
        keys = {"Estimate": "estimate", "Std. Error": "se", "t value": "t", "Pr(>|t|)": "p"}
        return f"max rel error {worst([(float(a), r[keys[c]]) for c in columns for a, r in zip(table[c], rows)]):.1e}"

    def boxcox_error() -> str:
        from engine.analysis.transform import power_transform

        model, expected = fit("boxcox_square")
        power = power_transform(model.boxcox_profile())
        return f"SE(λ) rel error {rel(power.se, expected['boxcox']['se']):.1e}"

    def one_df_boxcox() -> str:
        try:
            LinearModel("y ~ x", "boxcox").fit(pd.DataFrame({"x": [1, 2, 3], "y": [1.2, 2.9, 3.1]}))
        except Exception as exc:
            return f"refused: {str(exc).splitlines()[0][:80]}"
        return "fitted and printed (car refuses)"

    def tails_error() -> str:
        try:
            from engine.analysis.tails import log_f_sf
        except ImportError:
            from scipy import stats

            def log_f_sf(f: float, d1: float, d2: float) -> float:
                with np.errstate(divide="ignore"):
                    return float(np.log(stats.f.sf(f, d1, d2)))
        rows = json.loads((args.cases / "r" / "f_tails.json").read_text())["tails"]
        return f"log p max rel error {worst([(log_f_sf(r['F'], r['df1'], r['df2']), r['log_p']) for r in rows]):.1e}"

    def every_table(name: str) -> str:
        return "; ".join(f"{label} {attempt(check)}" for label, check in (
            ("coef", lambda: coefficient_error(name, ("Estimate", "Std. Error", "t value", "Pr(>|t|)"))),
            ("I", lambda: table_error(name, 1)), ("II", lambda: table_error(name, 2)),
            ("III", lambda: table_error(name, 3)), ("R²/F", lambda: summary_error(name))))

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else ""
    print(f"# CPU {cpu or platform.machine()}, numpy {np.__version__}")
    for label, check in (
        ("1 name collisions (Type III)", lambda: table_error("collision", 3)),
        ("2 whitelist functions", lambda: every_table("functions")),
        ("3 Type II aliased", lambda: table_error("aliased", 2)),
        ("3 Type II aliased, reordered", lambda: table_error("aliased_reordered", 2)),
        ("4 Type III aliased", lambda: table_error("aliased", 3)),
        ("5 no intercept (R², F)", lambda: summary_error("no_intercept")),
        ("6 SE, ill-conditioned", lambda: coefficient_error("ill_conditioned")),
        ("7 SE(λ) of Box-Cox", boxcox_error),
        ("8 Box-Cox, 1 residual df", one_df_boxcox),
        ("9 F tails (log p)", tails_error),
        ("cosmetic names, booleans", lambda: coefficient_error("booleans")),
        ("cosmetic names, no intercept", lambda: coefficient_error("no_intercept")),
    ):
        print(f"{label:32s} {attempt(check)}")


if __name__ == "__main__":
    main()
