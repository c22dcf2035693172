"""What a study's exports are made of, gathered from the store once for the CLI and the Export page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd

from engine.analysis.study_data import readable_log
from engine.errors import UserError
from engine.io.best import BestConfig, best_measured
from engine.io.report_html import study_report
from storage.store import Store, StoredStudy


def results_frame(store: Store, study: StoredStudy) -> pd.DataFrame:
    """Stored measurements, or the imported table of a table study that was never replayed."""
    frame = store.measurements(study.name)
    if study.spec.runner.get("kind") == "table" and frame.empty:
        frame = store.study_table(study.name)
    return frame


def best_or_none(study: StoredStudy, results: pd.DataFrame) -> BestConfig | None:
    try:
        return best_measured(study.spec, results)
    except UserError:
        return None  # nothing measured successfully yet


def _stored_fits(store: Store, name: str) -> Iterator[tuple[str, Any]]:
    """(label, row) of every stored model with an ANOVA table, labelled by id, formula and step."""
    for row in store.models(name).itertuples():
        if row.anova and row.anova != "null":
            step = "" if pd.isna(row.step) else f" (step {int(row.step)})"
            yield f"model {row.id}: {row.formula}{step}", row


def model_tables(store: Store, name: str) -> dict[str, pd.DataFrame]:
    """The ANOVA table of every stored model."""
    return {label: pd.DataFrame(json.loads(row.anova)) for label, row in _stored_fits(store, name)}


def model_warnings(store: Store, name: str) -> dict[str, list[str]]:
    """The fit warnings of every stored model (aliased terms, a refused Box-Cox...), labelled as its table."""
    return {label: list(json.loads(row.summary or "{}").get("warnings") or []) for label, row in _stored_fits(store, name)}


def report_html(store: Store, name: str, predicted: BestConfig | None = None) -> str:
    """The self-contained HTML report of a study: space, the best measured (and ``predicted``) configuration,
    designs, ANOVA tables, decisions, figures."""
    study = store.get_study(name)
    results = results_frame(store, study)
    return study_report(study.spec, results, designs=store.designs(name), anova=model_tables(store, name) or None,
                        fit_warnings=model_warnings(store, name),
                        decisions=readable_log(store.decisions(name)), best=best_or_none(study, results),
                        predicted=predicted, notes=store.study_notes(name))
