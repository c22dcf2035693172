"""What the Analyze page computes from a model, once per (measurements, formula, transform, ANOVA type) and
reused across views and reruns (issue 31: a widget that does not change the model must not refit it, and the
effect plots' least-squares means, 40% of a rerun, must not be recomputed for the same model).

Streamlit's ``cache_resource`` keeps the objects themselves (no pickling); the key is a digest of the
measurements and the settings, so a new measurement or another formula is a new entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import Analysis, analyze, plots
from engine.analysis.diagnostics import qq_data, residual_diagnostics
from engine.analysis.effects import effect_screening, interaction_effects, main_effects


def data_digest(data: pd.DataFrame) -> str:
    """A digest of the rows and columns: equal frames, equal digests."""
    rows = pd.util.hash_pandas_object(data, index=False).to_numpy()
    return hashlib.sha1(rows.tobytes() + "\x1f".join(map(str, data.columns)).encode()).hexdigest()


@st.cache_resource(max_entries=8, show_spinner="Fitting the model…")
def _analysis(_data: pd.DataFrame, key: str, formula: str, transform: str, anova_type: int) -> Analysis:
    return analyze(_data, formula, transform=transform, anova_type=anova_type)


def cached_analysis(data: pd.DataFrame, formula: str, transform: str, anova_type: int) -> tuple[Analysis, str]:
    """The analysis of ``formula`` on ``data`` and the key its figures are cached under."""
    key = f"{data_digest(data)}|{formula}|{transform}|{anova_type}"
    return _analysis(data, key, formula, transform, anova_type), key


@st.cache_resource(max_entries=64, show_spinner=False)
def _figure(_build: Callable[[], Any], key: str, what: str) -> Any:
    return _build()


def effect_figures(analysis: Analysis, key: str) -> tuple[Any, Any]:
    """The main-effects and half-normal figures of the analysis's model."""
    model = analysis.model
    return (_figure(lambda: plots.main_effects_figure(main_effects(model)), key, "main effects"),
            _figure(lambda: plots.half_normal_figure(effect_screening(model)), key, "half-normal"))


def interaction_figure(analysis: Analysis, key: str, a: str, b: str) -> Any:
    return _figure(lambda: plots.interaction_figure(interaction_effects(analysis.model, a, b)), key, f"interaction {a} {b}")


def diagnostic_figures(analysis: Analysis, key: str) -> tuple[Any, Any, Any, Any]:
    """Residuals against fitted, normal QQ, leverage, Cook's distance."""
    model = analysis.model

    def build() -> tuple[Any, Any, Any, Any]:
        diagnostics = residual_diagnostics(model)
        return (plots.residuals_figure(diagnostics), plots.qq_figure(qq_data(model)), plots.leverage_figure(diagnostics),
                plots.cooks_figure(diagnostics))

    figures: tuple[Any, Any, Any, Any] = _figure(build, key, "diagnostics")
    return figures
