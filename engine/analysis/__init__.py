"""Statistical analysis of measurements: R-equivalent linear models, ANOVA, transforms, decisions.

Every function returns data (DataFrames or dataclasses); figures live in
:mod:`engine.analysis.plots` and are drawn from that data. ``analyze`` is the one-call recompute.

Names are imported on first use (PEP 562): statsmodels and scipy.stats take seconds to import, and
``tunelab`` builds every sub-command's parser at start-up, so merely naming this package must be cheap.
"""

from __future__ import annotations

from engine.analysis.options import ANOVA_TYPES as ANOVA_TYPES
from engine.analysis.options import NCV_ALPHA as NCV_ALPHA
from engine.analysis.options import REPEATS as REPEATS
from engine.analysis.options import TRANSFORMS as TRANSFORMS
from engine.lazy import lazy_exports

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
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(),
                                             eager=("ANOVA_TYPES", "NCV_ALPHA", "REPEATS", "TRANSFORMS"))
