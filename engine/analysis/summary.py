"""The full recompute behind the Analyze page and ``tunelab analyze``: one call, one result.

Fit, ANOVA, coefficients, the variance test, Box–Cox and (optionally) the predicted minimum over a
candidate set, gathered in :class:`Analysis` with a JSON form and an R-like text form. The data
source is the caller's (a CSV for the CLI today, a study's measurements for the page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.anova_tables import anova
from engine.analysis.blas import single_blas_thread
from engine.analysis.data import AnalysisError, check_columns, mean_of_repeats
from engine.analysis.fit import FitSummary, LinearModel, coefficient_table, fit_summary
from engine.analysis.options import REPEATS
from engine.analysis.prediction import Argmin, Validity, argmin, predict
from engine.analysis.transform import PowerTransformResult
from engine.analysis.variance import VarianceTest, ncv_test
from engine.errors import brief
from engine.io.jsonable import jsonable
from engine.model.formula import parse


@dataclass(frozen=True)
class Analysis:
    """Everything one recompute produces."""

    model: LinearModel
    anova_type: int
    anova: pd.DataFrame
    coefficients: pd.DataFrame
    summary: FitSummary
    ncv_untransformed: VarianceTest
    ncv: VarianceTest
    power: PowerTransformResult | None
    best: Argmin | None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = jsonable(
            {
                "formula": self.model.formula,
                "response": self.model.response_,
                "transform": self.model.transform_.label,
                "anova_type": self.anova_type,
                "anova": self.anova,
                "coefficients": self.coefficients,
                "fit": self.summary.to_dict(),
                "ncv_test_untransformed": self.ncv_untransformed.to_dict(),
                "ncv_test": self.ncv.to_dict(),
                "power_transform": self.power.to_dict() if self.power else None,
                "predicted_minimum": self.best.to_dict() if self.best else None,
            }
        )
        return out

    def to_text(self) -> str:
        s, lines = self.summary, []
        lines.append(
            f"Response: {self.model.response_} (n = {s.n}, {s.n_excluded} excluded as missing; transform: {s.transform})"
        )
        lines += ["", f"Analysis of Variance Table (Type {'I' * self.anova_type})", _format(self.anova)]
        lines += ["", "Coefficients:", _format(self.coefficients)]
        lines += [
            "",
            f"Residual standard error: {s.sigma:.6g} on {s.df_residual} degrees of freedom",
            f"R-squared: {s.r_squared:.6g}, adjusted R-squared: {s.adj_r_squared:.6g}; AIC: {s.aic:.6g}, BIC: {s.bic:.6g}",
        ]
        lines += [f"Warning: {line}" for line in s.warnings]
        if self.power:
            p = self.power
            lines.append(
                f"Box-Cox (powerTransform): lambda = {p.lambda_:.6g} (SE {p.se:.4g}; Wald 95% [{p.wald_lower:.4g}, "
                f"{p.wald_upper:.4g}]), rounded lambda = {p.lambda_rounded:g}"
            )
        for label, test in (("untransformed fit", self.ncv_untransformed), ("this fit", self.ncv)):
            lines.append(f"ncvTest ({label}): Chisquare = {test.statistic:.6g}, Df = {test.df}, p = {test.p:.4g}")
        if self.best:
            b = self.best
            ties = f" ({len(b.ties)} rows tie)" if len(b.ties) > 1 else ""
            lines.append(f"Predicted minimum: row {b.position} (0-based), predicted {self.model.response_} = {b.predicted:.6g}{ties}")
        return "\n".join(lines)


@single_blas_thread
def analyze(
    data: pd.DataFrame,
    formula: str,
    *,
    transform: str | float = "none",
    anova_type: int = 1,
    candidates: pd.DataFrame | None = None,
    valid: Validity = None,
    repeats: str = "all",
    by: list[str] | None = None,
) -> Analysis:
    """Fit ``formula`` on ``data`` (all repeats, or their mean per configuration ``by``) and compute
    every table; with ``candidates``, also the predicted minimum among the valid rows."""
    if repeats not in REPEATS:
        raise AnalysisError(f"repeats {repeats!r}: expected one of {', '.join(REPEATS)}")
    if by is not None:
        check_columns(data, by, "by")
        if repeats != "mean":
            raise AnalysisError(f"by {brief(by)}: groups repeats for their mean, so it needs repeats 'mean'")
    if repeats == "mean":
        response = parse(formula, data.columns).response
        if response is None:
            raise AnalysisError(f"formula {formula!r}: needs a response on the left of '~'")
        data = mean_of_repeats(data, response, by)
    model = LinearModel(formula, transform).fit(data)
    best = argmin(predict(model, candidates), candidates, valid) if candidates is not None else None
    return Analysis(
        model=model,
        anova_type=anova_type,
        anova=anova(model, anova_type),
        coefficients=coefficient_table(model),
        summary=fit_summary(model),
        ncv_untransformed=model.ncv_untransformed_,
        ncv=ncv_test(model.resid_, model.fitted_),
        power=model.power_,
        best=best,
    )


def _format(table: pd.DataFrame) -> str:
    """R-like printing: 6 significant digits, blanks for NA, no index, unnamed stars column."""
    shown = table.copy()
    for column in shown.columns:
        if column == "term":
            continue
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = [("" if not np.isfinite(v) else f"{v:.6g}") for v in shown[column]]
        elif column == "stars":
            shown[column] = shown[column].fillna("")
    shown = shown.rename(columns={"term": "", "stars": ""})
    text: str = shown.to_string(index=False)
    return text
