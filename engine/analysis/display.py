"""Statistics tables as text a person reads, the way R prints them: significant digits (scientific
notation for small or large values) rather than fixed decimals that show ``0.0000``, p-values below
machine precision as ``< 2e-16``, and blanks where a cell has no value (the Residuals row's F)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

#: R's floor for printed p-values (``format.pval`` with ``.Machine$double.eps``).
P_FLOOR = 2.220446e-16
#: Columns holding p-values, in the names R gives them.
P_COLUMNS = ("Pr(>F)", "Pr(>|t|)", "Pr(>Chisq)", "p")


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def format_number(value: Any, digits: int = 4) -> str:
    """``digits`` significant digits (``%g``: ``55.72``, ``2.414``, ``4.2e-09``); integers as they are."""
    if _missing(value):
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.{digits}g}"


def format_p(p: Any) -> str:
    """A p-value with 2 significant digits; ``< 2e-16`` below what a double resolves (R's convention)."""
    if _missing(p):
        return ""
    return "< 2e-16" if p < P_FLOOR else f"{p:.2g}"


def readable_table(table: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """Every cell of an ANOVA or coefficient table as display text (see the module docstring)."""
    shown = pd.DataFrame(index=table.index)
    for column in table.columns:
        if column in P_COLUMNS:
            shown[column] = [format_p(v) for v in table[column]]
        elif pd.api.types.is_numeric_dtype(table[column]):
            shown[column] = [format_number(v, digits) for v in table[column].astype(object)]
        else:
            shown[column] = ["" if _missing(v) else str(v) for v in table[column]]
    return shown


def predicted_best_caption(best: Mapping[str, Any], objective: str) -> str:
    """The predicted best as the Analyze page and ``tunelab analyze --propose`` print it, from an
    :class:`~engine.analysis.optimum.Optimum`'s ``to_dict()``: the levels the model sets, the factors it
    cannot, the value, and how the optimum was found (exact, or the best of a coordinate descent)."""
    undetermined = list(best.get("undetermined") or [])
    levels = ", ".join(f"{name} = {value}" for name, value in best["point"].items() if name not in undetermined)
    open_ = f"; not determined by the model: {', '.join(undetermined)}" if undetermined else ""
    text = f"Predicted best configuration: {levels or '(none)'}{open_} (predicted {objective} = {best['predicted']:.4g})."
    if best.get("method") == "exact" and best.get("size") == 1:
        text += " The one valid configuration the fixed factors leave."
    elif best.get("method") == "exact":
        text += f" Exact: the model's optimum over all {best['size']:,} valid configurations."
    elif best.get("method") == "coordinate descent":
        text += (f" Coordinate descent over the levels from {best['starts']:d} starts ({best['evaluated']:,} of "
                 f"{best['size']:,} configurations predicted): the best found, not proven optimal.")
    return text
