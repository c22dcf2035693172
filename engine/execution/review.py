"""Tuning runs that pause for a person: DLMT's step decisions, kept in the decisions log between
two ``tunelab tune`` calls.

A run without ``--auto`` stops at the first decision nobody has taken yet and logs it as
``proposed`` (kind :data:`KIND`, with the run's identity and the whole decision record as evidence).
A person accepts, edits or rejects it (Analyze page or ``tunelab decide``), which appends the
resolution under the same run and step. Running the same ``tunelab tune`` command again replays
the run: the strategy is rebuilt from its seed, the configurations it asks for are answered from
the stored measurements, the decisions already taken are applied in order, and measuring resumes
where it stopped. The log stays append-only, so every choice keeps its author and time.

Pure functions over the decisions-log frame (``storage.Store.decisions``): no store in here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.errors import UserError

if TYPE_CHECKING:  # statsmodels and scipy load with the analysis: imported where a decision is built
    from engine.analysis.decision import Decision

KIND = "tune-step"
RESOLVED = ("accepted", "edited", "rejected")
ACTIONS = ("accept", "edit", "reject")


def run_key(strategy: str, seed: int, budget: int, options: Mapping[str, Any]) -> str:
    """The identity of a tuning run: what must match for a replay to retrace it."""
    plain = {k: v for k, v in options.items() if k != "auto"}
    return json.dumps({"strategy": strategy, "seed": int(seed), "budget": int(budget), "options": plain},
                      sort_keys=True, default=str)


def _rows(log: pd.DataFrame) -> list[dict[str, Any]]:
    """Tuning-decision rows, oldest first, with their evidence parsed."""
    if log.empty:
        return []
    rows = []
    for row in log[log["kind"] == KIND].to_dict("records"):
        evidence = row["evidence"]
        evidence = json.loads(evidence) if isinstance(evidence, str) else evidence
        if isinstance(evidence, Mapping) and "run" in evidence and "decision" in evidence:
            rows.append({**row, "evidence": evidence})
    return rows


def taken(log: pd.DataFrame, run: str, step: int) -> tuple[Decision | None, bool]:
    """(the decision a person or the automatic mode took at ``step`` of ``run`` or None, whether
    the step's proposal is already logged)."""
    from engine.analysis import Decision

    logged = False
    resolved: Decision | None = None
    for row in _rows(log):
        if row["evidence"]["run"] != run or row["step"] != step:
            continue
        logged = True
        if row["outcome"] in (*RESOLVED, "auto"):
            resolved = Decision.from_record(row["evidence"]["decision"])
    return resolved, logged


def pending(log: pd.DataFrame) -> dict[str, Any] | None:
    """The newest proposal no one has answered: ``{"run", "step", "decision", "id"}``, or None."""
    from engine.analysis import Decision

    open_: dict[tuple[str, int], dict[str, Any]] = {}
    for row in _rows(log):
        key = (row["evidence"]["run"], row["step"])
        if row["outcome"] == "proposed":
            open_[key] = row
        else:
            open_.pop(key, None)
    if not open_:
        return None
    row = max(open_.values(), key=lambda r: r["id"])
    return {"run": row["evidence"]["run"], "step": int(row["step"]), "id": int(row["id"]),
            "decision": Decision.from_record(row["evidence"]["decision"])}


def resolve(decision: Decision, action: str, by: str, *, fix: Mapping[str, Any] | None = None,
            formula: str | None = None, note: str | None = None) -> Decision:
    """The decision rejected, or accepted by ``by`` (recorded as an edit when ``fix`` or
    ``formula`` differ from the proposal)."""
    if action not in ACTIONS:
        raise UserError(f"decision action {action!r} must be one of {', '.join(ACTIONS)}")
    if action == "reject":
        return decision.reject(by, note=note)
    if action == "edit" and fix is None and formula is None:
        raise UserError("decision edit: give the factors to fix or the next formula")
    return decision.settle(by, fix=fix, formula=formula, note=note)


def log_entry(run: str, decision: Decision, step: int) -> dict[str, Any]:
    """Keyword arguments of ``Store.log_decision`` for a tuning decision (proposed or taken)."""
    record = decision.to_record()
    outcome = "auto" if decision.by == "auto" else decision.status
    return {"kind": KIND, "proposed": record["proposed"], "chosen": record["chosen"], "outcome": outcome,
            "actor": decision.by or "tunelab", "explanation": "\n".join(decision.explanation),
            "evidence": {"run": run, "decision": record}, "step": step, "note": decision.note}
