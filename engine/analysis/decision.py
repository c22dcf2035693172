"""DLMT decisions: which factors to fix, at which levels, and why — as a record a person can amend.

Which factors: by default (``rule="factor"``) each factor of the model gets one test, the partial F of
every term that contains it, and the p-values are adjusted across the factors (Holm, or ``"fdr"``:
Benjamini–Hochberg; :mod:`engine.analysis.factor_tests`); a factor is fixed when its adjusted p is below
the threshold. ``rule="term"`` is the DLMT paper's (Orio, dlmt.md §5.2): every factor of a term whose
ANOVA p-value is below the threshold. At which levels: the model's optimum over the valid space
(:func:`engine.analysis.optimum.model_optimum`), the same point the profiler opens at and the caption
quotes. Every term that uses a fixed factor leaves the model. A person then accepts, edits (other
factors or levels, another formula or transform) or rejects it; automatic runs accept with ``by="auto"``.
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
from engine.analysis.factor_tests import ADJUSTMENT_NAMES, factor_tests, reason, significant_factors
from engine.analysis.fit import LinearModel, fit_summary
from engine.analysis.optimum import Optimum, model_levels, model_optimum
from engine.analysis.options import ADJUSTMENTS, FACTOR_RULES
from engine.analysis.prediction import Validity, predict, valid_mask
from engine.io.jsonable import jsonable
from engine.model.formula import FormulaError, formula_text, parse
from engine.space.factors import Space

#: How a decision stands: proposed, then settled by a person (or ``by="auto"``).
OUTCOMES = ("proposed", "accepted", "edited", "rejected")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Decision:
    """A proposed step and its outcome. ``proposed``/``chosen`` hold ``fix`` (factor -> level),
    ``formula`` (the model for the next step) and ``transform``; ``evidence`` holds the ANOVA table, the
    factor tests and the predicted best. ``rule``/``adjust``: how factors were chosen (a record from
    before the factor rule was made by the term rule)."""

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
    rule: str = "term"
    adjust: str = "none"

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
                "rule": self.rule,
                "adjust": self.adjust,
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
    candidates: Space | pd.DataFrame | None = None,
    fixed: Mapping[str, Any] | None = None,
    valid: Validity = None,
    best: Mapping[str, Any] | None = None,
    reference: Mapping[str, Any] | None = None,
    anova_type: int = 1,
    rule: str = "factor",
    adjust: str = "holm",
    seed: int = 0,
) -> Decision:
    """Fix the factors that matter (``rule``, ``adjust``: see the module) at the model's optimum over
    ``candidates`` (a space, with the ``fixed`` factors held; or the rows listing its valid configurations,
    less those ``valid`` rules out), or at ``best`` when the caller chose the point; one reason per factor."""
    if not 0 < threshold < 1:
        raise AnalysisError(f"threshold {threshold!r}: expected a p-value between 0 and 1")
    if rule not in FACTOR_RULES:
        raise AnalysisError(f"rule {rule!r}: expected one of {', '.join(FACTOR_RULES)}")
    if adjust not in ADJUSTMENTS:
        raise AnalysisError(f"adjust {adjust!r}: expected one of {', '.join(ADJUSTMENTS)}")
    if isinstance(candidates, pd.DataFrame):
        candidates = candidates[valid_mask(candidates, valid)]
    optimum = _optimum(model, candidates, fixed, best, reference, seed)
    point = optimum.point
    table = anova(model, anova_type)
    tests = factor_tests(model, adjust)
    if rule == "factor":
        chosen = set(significant_factors(tests, threshold))
        fix = {v: jsonable(point[v]) for v in model.variables_ if v in chosen}
        explanation = tuple(_factor_reason(model, row, point, candidates, fix, adjust) for _, row in tests.iterrows())
        if not fix:
            name = ADJUSTMENT_NAMES[adjust]
            explanation = (f"no factor has {'p' if adjust == 'none' else name + '-adjusted p'} < {threshold:g}: "
                           "nothing to fix; the model stays as it is", *explanation)
    else:
        by_name = {t.display: t for t in model.terms_}
        rows = table[(table["Pr(>F)"] < threshold) & table["term"].isin(list(by_name))]
        reasons: dict[str, pd.Series] = {}
        for _, row in rows.sort_values("Pr(>F)", kind="stable").iterrows():
            for variable in sorted(by_name[row["term"]].variables):
                reasons.setdefault(variable, row)
        fix = {v: jsonable(point[v]) for v in model.variables_ if v in reasons}
        explanation = tuple(_term_reason(model, v, reasons[v], point, candidates) for v in fix) or (
            f"no term has p < {threshold:g}: nothing to fix; the model stays as it is",
        )
    terms = [(t.display, sorted(t.variables)) for t in model.terms_]
    formula = formula_text(model.response_, [t for t, variables in terms if not set(variables) & set(fix)],
                          model.formula_.has_intercept)
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
                "factor_tests": tests,
                "fit": fit_summary(model).to_dict(),
                "predicted_best": optimum.to_dict(),
                "model": {"response": model.response_, "intercept": model.formula_.has_intercept,
                          "variables": list(model.variables_), "terms": terms},
            }
        ),
        rule=rule,
        adjust=adjust,
    )


def _optimum(model: LinearModel, candidates: Space | pd.DataFrame | None, fixed: Mapping[str, Any] | None,
             best: Mapping[str, Any] | None, reference: Mapping[str, Any] | None, seed: int) -> Optimum:
    """The point the levels come from: the caller's ``best``, else the model's optimum over the candidates."""
    if best is not None:
        fit = predict(model, pd.DataFrame([dict(best)]))
        return Optimum(dict(best), float(fit["fit"].iloc[0]), float(fit["predicted"].iloc[0]), "given", 1, 1)
    if candidates is None:
        raise AnalysisError("decision: give the candidate set (or the best point) to choose levels from")
    return model_optimum(model, candidates, fixed=fixed, reference=reference, seed=seed)


def _intercept_only(formula: str, columns: Sequence[str]) -> bool:
    try:
        return not parse(formula, columns).terms
    except FormulaError as exc:
        raise AnalysisError(f"next formula: {exc}") from None


def _factor_reason(model: LinearModel, row: pd.Series, point: Mapping[str, Any],
                   candidates: Space | pd.DataFrame | None, fix: Mapping[str, Any], adjust: str) -> str:
    """``x5 (x5, I(x5^2), I(x5^3)): F = 80.2 on 3 and 42 df, p = 1e-17, Holm-adjusted p = 8e-17 — fix at -1.0,
    predicted -4.1 y vs its other levels`` (or ``— left free``)."""
    factor = str(row["factor"])
    head = reason(row, model.df_resid_, adjust)
    if factor not in fix:
        return f"{head} — left free"
    return head + f" — fix at {jsonable(point[factor])}" + _change(model, factor, point, candidates)


def _term_reason(model: LinearModel, factor: str, row: pd.Series, point: Mapping[str, Any],
                 candidates: Space | pd.DataFrame | None) -> str:
    """``lws_y: F = 48.2, p = 3e-06 — fix at 2, predicted -31% time vs its other levels``."""
    via = "" if row["term"] == factor else f" (term {row['term']})"
    head = f"{factor}{via}: F = {row['F value']:.3g}, p = {row['Pr(>F)']:.2g} — fix at {jsonable(point[factor])}"
    return head + _change(model, factor, point, candidates)


def _change(model: LinearModel, factor: str, point: Mapping[str, Any], candidates: Space | pd.DataFrame | None) -> str:
    """``, predicted -31% time vs its other levels``: the prediction at the point against the mean over the
    factor's other levels, every other factor held at the point. Only valid configurations count (rows of
    the candidates, or the space's valid ones), so a level is never credited with an impossible neighbour."""
    level = point[factor]
    if isinstance(candidates, pd.DataFrame):
        same = np.ones(len(candidates), dtype=bool)
        for v in model.variables_:
            if v != factor:
                same &= (candidates[v] == point[v]).to_numpy()
        levels = [v for v in pd.unique(candidates.loc[same, factor]) if v != level]
    elif isinstance(candidates, Space) and factor in candidates.names:
        levels = [v for v in model_levels(model, candidates)[factor] if v != level]
    else:
        levels = [v for v in pd.unique(model.data_[factor]) if v != level]
    rows = pd.DataFrame([{**dict(point), factor: v} for v in [level, *levels]])
    if isinstance(candidates, Space) and set(candidates.names) <= set(rows.columns):
        rows = rows[candidates.valid_mask(rows)]
    if len(rows) < 2 or rows[factor].iloc[0] != level:
        return ""
    predicted = predict(model, rows)["predicted"].to_numpy()
    here, mean_others = predicted[0], float(np.mean(predicted[1:]))
    if np.all(predicted > 0) and math.isfinite(mean_others):
        change = f"{100.0 * (here / mean_others - 1.0):+.0f}%"
    else:
        change = f"{here - mean_others:+.3g}"
    return f", predicted {change} {model.response_} vs its other levels"
