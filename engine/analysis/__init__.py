"""Statistical analysis of measurements: R-equivalent linear models, ANOVA, transforms, decisions.

Every function returns data (DataFrames or dataclasses); figures live in
:mod:`engine.analysis.plots` and are drawn from that data. ``analyze`` is the one-call recompute.

Names are imported on first use (PEP 562): statsmodels and scipy.stats take seconds to import, and
``tunelab`` builds every sub-command's parser at start-up, so merely naming this package must be cheap.
"""

from __future__ import annotations

import importlib

from engine.analysis.options import ANOVA_TYPES, NCV_ALPHA, REPEATS, TRANSFORMS

_EXPORTS = {
    "anova_tables": ("anova", "significant_terms", "sum_coded_matrix"),
    "data": ("AnalysisError", "mean_of_repeats"),
    "decision": ("Decision", "propose_decision"),
    "diagnostics": ("qq_data", "residual_diagnostics"),
    "effects": ("effect_screening", "interaction_effects", "main_effects"),
    "fit": ("FitSummary", "LinearModel", "coefficient_table", "fit_summary"),
    "prediction": ("Argmin", "Refinement", "argmin", "candidate_matrix", "predict", "predicted_minimum", "refine_neighbourhood"),
    "summary": ("Analysis", "analyze"),
    "labels": ("Term", "stars"),
    "transform": ("PowerTransformResult", "Transform", "TransformError", "power_transform", "round_lambda"),
    "variance": ("VarianceTest", "breusch_pagan", "ncv_test"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["ANOVA_TYPES", "NCV_ALPHA", "REPEATS", "TRANSFORMS", *sorted(_MODULE_OF)]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"engine.analysis.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
