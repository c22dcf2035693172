"""Regression diagnostics as data: residuals vs fitted, normal QQ, leverage and Cook's distance.

Computed from the QR of the fitted model (leverage = row norms of Q), with R's conventions:
standardised residuals e/(σ·√(1−h)), Cook's D = r²·h/(p·(1−h)), and ``qqnorm``'s plotting positions
(``ppoints``), so the plots match R's ``plot(lm)`` panels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.analysis.fit import LinearModel
from engine.analysis.quantiles import normal_quantile


def residual_diagnostics(model: LinearModel) -> pd.DataFrame:
    """One row per fitted observation: fitted, residual, standardised residual, leverage, Cook's D."""
    resid = model.resid_
    leverage = model.qr_.leverage()
    sigma = np.sqrt(float(resid @ resid) / model.df_resid_)
    with np.errstate(divide="ignore", invalid="ignore"):
        standardised = resid / (sigma * np.sqrt(1.0 - leverage))
        cooks = standardised**2 * leverage / (model.qr_.rank * (1.0 - leverage))
    return pd.DataFrame(
        {
            "row": model.data_.index,
            "fitted": model.fitted_,
            "residual": resid,
            "std_residual": standardised,
            "leverage": leverage,
            "cooks_distance": cooks,
        }
    )


def ppoints(n: int) -> np.ndarray:
    """R's ``ppoints``: (i − a)/(n + 1 − 2a), a = 3/8 for n ≤ 10, else 1/2."""
    a = 3.0 / 8.0 if n <= 10 else 0.5
    return (np.arange(1, n + 1) - a) / (n + 1 - 2 * a)


def qq_data(model: LinearModel) -> pd.DataFrame:
    """Normal QQ pairs: theoretical quantile against sorted standardised residual."""
    diag = residual_diagnostics(model).sort_values("std_residual", kind="stable")
    return pd.DataFrame(
        {
            "theoretical": normal_quantile(ppoints(len(diag))),
            "sample": diag["std_residual"].to_numpy(),
            "row": diag["row"].to_numpy(),
        }
    )
