"""Statistical analysis of measurements: R-equivalent linear models, ANOVA, transforms, decisions.

Every function returns data (DataFrames or dataclasses); figures live in
:mod:`engine.analysis.plots` and are drawn from that data. ``analyze`` is the one-call recompute.

Names are imported on first use (PEP 562): statsmodels and scipy.stats take seconds to import, and
``tunelab`` builds every sub-command's parser at start-up, so merely naming this package must be cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    "factor_tests": ("adjusted_p", "factor_tests"),
    "fit": ("FitSummary", "LinearModel", "coefficient_table", "fit_summary"),
    "optimum": ("Optimum", "model_optimum"),
    "prediction": ("Argmin", "Refinement", "argmin", "candidate_matrix", "predict", "predicted_minimum", "refine_neighbourhood"),
    "summary": ("Analysis", "analyze"),
    "labels": ("Term", "stars"),
    "transform": ("PowerTransformResult", "Transform", "TransformError", "power_transform", "round_lambda"),
    "variance": ("VarianceTest", "breusch_pagan", "ncv_test"),
}
if TYPE_CHECKING:  # what mypy sees of the lazy names (_EXPORTS is what runs); keep the two in step
    from engine.analysis.anova_tables import anova as anova
    from engine.analysis.anova_tables import significant_terms as significant_terms
    from engine.analysis.anova_tables import sum_coded_matrix as sum_coded_matrix
    from engine.analysis.data import AnalysisError as AnalysisError
    from engine.analysis.data import mean_of_repeats as mean_of_repeats
    from engine.analysis.decision import Decision as Decision
    from engine.analysis.decision import propose_decision as propose_decision
    from engine.analysis.diagnostics import qq_data as qq_data
    from engine.analysis.diagnostics import residual_diagnostics as residual_diagnostics
    from engine.analysis.effects import effect_screening as effect_screening
    from engine.analysis.effects import interaction_effects as interaction_effects
    from engine.analysis.effects import main_effects as main_effects
    from engine.analysis.factor_tests import adjusted_p as adjusted_p
    from engine.analysis.factor_tests import factor_tests as factor_tests
    from engine.analysis.fit import FitSummary as FitSummary
    from engine.analysis.fit import LinearModel as LinearModel
    from engine.analysis.fit import coefficient_table as coefficient_table
    from engine.analysis.fit import fit_summary as fit_summary
    from engine.analysis.labels import Term as Term
    from engine.analysis.labels import stars as stars
    from engine.analysis.optimum import Optimum as Optimum
    from engine.analysis.optimum import model_optimum as model_optimum
    from engine.analysis.prediction import Argmin as Argmin
    from engine.analysis.prediction import Refinement as Refinement
    from engine.analysis.prediction import argmin as argmin
    from engine.analysis.prediction import candidate_matrix as candidate_matrix
    from engine.analysis.prediction import predict as predict
    from engine.analysis.prediction import predicted_minimum as predicted_minimum
    from engine.analysis.prediction import refine_neighbourhood as refine_neighbourhood
    from engine.analysis.summary import Analysis as Analysis
    from engine.analysis.summary import analyze as analyze
    from engine.analysis.transform import PowerTransformResult as PowerTransformResult
    from engine.analysis.transform import Transform as Transform
    from engine.analysis.transform import TransformError as TransformError
    from engine.analysis.transform import power_transform as power_transform
    from engine.analysis.transform import round_lambda as round_lambda
    from engine.analysis.variance import VarianceTest as VarianceTest
    from engine.analysis.variance import breusch_pagan as breusch_pagan
    from engine.analysis.variance import ncv_test as ncv_test
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(),
                                             eager=("ANOVA_TYPES", "NCV_ALPHA", "REPEATS", "TRANSFORMS"))
