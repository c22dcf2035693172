"""DLMT decisions: which factors to fix, at which levels, and why — as a record a person can amend.

The proposal is the automated DLMT rule (Orio, dlmt.md §5.2): every factor of a term whose ANOVA
p-value is below the threshold is fixed at its level in the predicted best configuration, and every
term that uses a fixed factor leaves the model. A person then accepts, edits (other factors or
levels, another formula or transform) or rejects it; automatic runs accept with ``by="auto"``.
Each outcome is an immutable :class:`Decision` whose ``to_record()`` is what the decisions log stores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.anova_tables import anova
from engine.analysis.data import AnalysisError
from engine.analysis.fit import LinearModel, fit_summary
from engine.analysis.prediction import Validity, predict, predicted_minimum
from engine.io.jsonable import jsonable
from engine.model.formula import FormulaError, formula_text, parse

#: How a decision stands: proposed, then settled by a person (or ``by="auto"``).
OUTCOMES = ("proposed", "accepted", "edited", "rejected")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Decision:
    """A proposed step and its outcome. ``proposed``/``chosen`` hold ``fix`` (factor -> level),
    ``formula`` (the model for the next step) and ``transform``; ``evidence`` holds the ANOVA table."""

    formula: str
    transform: str
    threshold: float
    anova_type: int
    proposed: dict[str, Any]
    explanation: tuple[str, ...]
    evidence: dict[str, Any]
    status: str = "proposed"
    chosen: dict[str, Any] | None = None
    by: str | None = None
    note: str | None = None
    created_at: str = field(default_factory=_now)
    decided_at: str | None = None

    def accept(self, by: str, note: str | None = None) -> Decision:
        return replace(self, status="accepted", chosen=dict(self.proposed), by=by, note=note, decided_at=_now())

    def next_formula(self, fix: Mapping[str, Any]) -> str:
        """The model for the step after fixing ``fix``: every term of this model that uses no fixed
        factor (what the proposal does for its own fix, redone for a person's edited one)."""
        model = self.evidence.get("model")
        if not model:  # a record from before the model was kept in the evidence
            return str(self.proposed["formula"])
        kept = [term for term, variables in model["terms"] if not set(variables) & set(fix)]
        return formula_text(model["response"], kept, model["intercept"])

    def edit(
        self,
        by: str,
        *,
        fix: Mapping[str, Any] | None = None,
        formula: str | None = None,
        transform: str | None = None,
        note: str | None = None,
    ) -> Decision:
        """Amend the proposal; anything not given keeps its proposed value, except that a new ``fix``
        without a formula gets the model rebuilt from the factors it leaves free. An intercept-only
        model is refused while factors remain free: the next step could estimate none of them."""
        fix = dict(self.proposed["fix"] if fix is None else fix)
        if formula is None:
            formula = self.proposed["formula"] if fix == self.proposed["fix"] else self.next_formula(fix)
        model = self.evidence.get("model") or {"variables": [], "response": ""}
        free = [v for v in model["variables"] if v not in fix]
        if free and _intercept_only(formula, [*model["variables"], model["response"]]):
            raise AnalysisError(f"next formula {formula!r} estimates no factor while {', '.join(free)} "
                                "stay free: keep their terms or fix them")
        chosen = {
            "fix": jsonable(fix),
            "formula": formula,
            "transform": self.proposed["transform"] if transform is None else transform,
        }
        return replace(self, status="edited", chosen=chosen, by=by, note=note, decided_at=_now())

    def settle(self, by: str, *, fix: Mapping[str, Any] | None = None, formula: str | None = None,
               note: str | None = None) -> Decision:
        """Accept when ``fix`` and ``formula`` leave the proposal as it is, else record the edit
        (what a person's "accept" button means after touching the pre-filled widgets)."""
        same = ((fix is None or dict(fix) == self.proposed["fix"])
                and (formula is None or formula == self.proposed["formula"]))
        return self.accept(by, note=note) if same else self.edit(by, fix=fix, formula=formula, note=note)

    def reject(self, by: str, note: str | None = None) -> Decision:
        return replace(self, status="rejected", chosen=None, by=by, note=note, decided_at=_now())

    def to_record(self) -> dict[str, Any]:
        """A JSON-able dict with every field (what the decisions log stores)."""
        record: dict[str, Any] = jsonable(
            {
                "formula": self.formula,
                "transform": self.transform,
                "threshold": self.threshold,
                "anova_type": self.anova_type,
                "proposed": self.proposed,
                "chosen": self.chosen,
                "status": self.status,
                "by": self.by,
                "note": self.note,
                "explanation": list(self.explanation),
                "evidence": self.evidence,
                "created_at": self.created_at,
                "decided_at": self.decided_at,
            }
        )
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Decision:
        if record.get("status") not in OUTCOMES:
            raise AnalysisError(f"decision record: status {record.get('status')!r} is not one of {', '.join(OUTCOMES)}")
        values = dict(record)
        values["explanation"] = tuple(values.get("explanation", ()))
        return cls(**values)


def propose_decision(
    model: LinearModel,
    threshold: float = 0.05,
    *,
    candidates: pd.DataFrame | None = None,
    valid: Validity = None,
    best: Mapping[str, Any] | None = None,
    anova_type: int = 1,
) -> Decision:
    """Fix every factor of a term with p < ``threshold`` at the predicted best (``best``, or the
    argmin of the prediction over ``candidates``), with a one-line reason per factor."""
    if not 0 < threshold < 1:
        raise AnalysisError(f"threshold {threshold!r}: expected a p-value between 0 and 1")
    if best is None:
        if candidates is None:
            raise AnalysisError("decision: give the candidate set (or the best point) to choose levels from")
        best = predicted_minimum(model, candidates, valid).point
    table = anova(model, anova_type)
    by_name = {t.display: t for t in model.terms_}
    rows = table[(table["Pr(>F)"] < threshold) & table["term"].isin(list(by_name))]
    reasons: dict[str, pd.Series] = {}
    for _, row in rows.sort_values("Pr(>F)", kind="stable").iterrows():
        for variable in sorted(by_name[row["term"]].variables):
            reasons.setdefault(variable, row)
    fix = {v: jsonable(best[v]) for v in model.variables_ if v in reasons}
    terms = [(t.display, sorted(t.variables)) for t in model.terms_]
    formula = formula_text(model.response_, [t for t, variables in terms if not set(variables) & set(fix)],
                          model.formula_.has_intercept)
    explanation = tuple(_reason(model, v, reasons[v], best, candidates) for v in fix) or (
        f"no term has p < {threshold:g}: nothing to fix; the model stays as it is",
    )
    fitted_best = predict(model, pd.DataFrame([dict(best)]))
    return Decision(
        formula=model.formula,
        transform=model.transform_.label,
        threshold=threshold,
        anova_type=anova_type,
        proposed={"fix": fix, "formula": formula, "transform": model.transform_.label},
        explanation=explanation,
        evidence=jsonable(
            {
                "anova": table,
                "fit": fit_summary(model).to_dict(),
                "predicted_best": {"point": dict(best), "predicted": float(fitted_best["predicted"].iloc[0])},
                "model": {"response": model.response_, "intercept": model.formula_.has_intercept,
                          "variables": list(model.variables_), "terms": terms},
            }
        ),
    )


def _intercept_only(formula: str, columns: Sequence[str]) -> bool:
    try:
        return not parse(formula, columns).terms
    except FormulaError as exc:
        raise AnalysisError(f"next formula: {exc}") from None


def _reason(model: LinearModel, factor: str, row: pd.Series, best: Mapping[str, Any], candidates: pd.DataFrame | None) -> str:
    """``lws_y: F = 48.2, p = 3e-06 — fix at 2, predicted -31% time vs its other levels``.

    The comparison holds every other model factor at the best point and, given candidates, uses only
    candidate (valid) configurations, so it never credits a level with an impossible neighbour."""
    via = "" if row["term"] == factor else f" (term {row['term']})"
    head = f"{factor}{via}: F = {row['F value']:.3g}, p = {row['Pr(>F)']:.2g} — fix at {jsonable(best[factor])}"
    others = [v for v in model.variables_ if v != factor]
    if candidates is not None:
        same = np.ones(len(candidates), dtype=bool)
        for v in others:
            same &= (candidates[v] == best[v]).to_numpy()
        levels = [v for v in pd.unique(candidates.loc[same, factor]) if v != best[factor]]
    else:
        levels = [v for v in pd.unique(model.data_[factor]) if v != best[factor]]
    if not levels:
        return head
    rows = pd.DataFrame([{**{v: best[v] for v in model.variables_}, factor: v} for v in [best[factor], *levels]])
    predicted = predict(model, rows)["predicted"].to_numpy()
    here, mean_others = predicted[0], float(np.mean(predicted[1:]))
    if np.all(predicted > 0) and math.isfinite(mean_others):
        change = f"{100.0 * (here / mean_others - 1.0):+.0f}%"
    else:
        change = f"{here - mean_others:+.3g}"
    return f"{head}, predicted {change} {model.response_} vs its other levels"
