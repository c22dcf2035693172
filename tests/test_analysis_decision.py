"""DLMT decisions: the automatic proposal, the person's accept / edit / reject, and the log record."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.analysis import AnalysisError, Decision, LinearModel, anova, predicted_minimum, propose_decision
from tests.analysis_support import laplacian_space, r_case


@pytest.fixture(scope="module")
def laplacian():
    case = r_case("laplacian_step1")
    space = laplacian_space()
    model = LinearModel(case["formula"], "boxcox-round").fit(pd.DataFrame(case["data"]))
    return model, space


def test_proposal_fixes_every_factor_of_a_significant_term_at_the_predicted_best(laplacian):
    model, space = laplacian
    decision = propose_decision(model, 0.05, candidates=space)
    table = anova(model, 1).set_index("term")
    # Significant on the log scale: I(1/y_component_number), vector_length, lws_y, I(1/lws_y),
    # elements_number, threads_number, I(1/threads_number).
    expected = {"y_component_number", "vector_length", "lws_y", "elements_number", "threads_number"}
    assert set(decision.proposed["fix"]) == expected
    assert table.loc["load_overlap", "Pr(>F)"] > 0.05 and "load_overlap" not in decision.proposed["fix"]
    best = predicted_minimum(model, space).point
    assert decision.proposed["fix"] == {k: best[k] for k in decision.proposed["fix"]}
    assert decision.proposed["formula"] == "time_per_pixel ~ load_overlap + temporary_size"
    assert decision.proposed["transform"] == "log" and decision.status == "proposed"
    line = next(e for e in decision.explanation if e.startswith("lws_y:"))
    f, p = table.loc["lws_y", ["F value", "Pr(>F)"]]
    assert f"F = {f:.3g}, p = {p:.2g}" in line and f"fix at {best['lws_y']}" in line and "%" in line
    assert any(e.startswith("y_component_number (term I(1/y_component_number))") for e in decision.explanation)
    assert [r["term"] for r in decision.evidence["anova"]] == list(table.index)


def test_accept_edit_reject_are_records(laplacian):
    model, space = laplacian
    proposal = propose_decision(model, 0.01, candidates=space)
    accepted = proposal.accept(by="auto")
    assert accepted.status == "accepted" and accepted.chosen == proposal.proposed and accepted.by == "auto"
    edited = proposal.edit(by="ana", fix={"lws_y": 2}, transform="none", note="keep threads open")
    assert edited.chosen == {"fix": {"lws_y": 2}, "formula": proposal.next_formula({"lws_y": 2}),
                             "transform": "none"}
    rejected = proposal.reject(by="ana", note="rerun first")
    assert rejected.status == "rejected" and rejected.chosen is None
    assert proposal.status == "proposed"  # decisions are immutable
    for decision in (proposal, accepted, edited, rejected):
        record = decision.to_record()
        text = json.dumps(record, allow_nan=False)
        assert Decision.from_record(json.loads(text)) == Decision.from_record(record)
        assert record["evidence"]["anova"][-1]["term"] == "Residuals"
        assert record["evidence"]["anova"][-1]["F value"] is None
    with pytest.raises(AnalysisError, match="status"):
        Decision.from_record({**proposal.to_record(), "status": "maybe"})


def test_an_edited_fix_rebuilds_the_next_model_from_the_factors_left_free(laplacian):
    model, space = laplacian
    proposal = propose_decision(model, 0.01, candidates=space)
    assert proposal.next_formula(proposal.proposed["fix"]) == proposal.proposed["formula"]
    rebuilt = proposal.next_formula({"lws_y": 2})
    assert "lws_y" not in rebuilt and "vector_length" in rebuilt and "I(1/elements_number)" in rebuilt
    assert proposal.next_formula({}) == "time_per_pixel ~ " + " + ".join(t.display for t in model.terms_)
    everything = {v: 1 for v in model.variables_}
    assert proposal.next_formula(everything) == "time_per_pixel ~ 1"
    assert proposal.edit(by="ana", fix=everything, formula="time_per_pixel ~ 1").chosen["formula"].endswith("~ 1")


@pytest.mark.parametrize("formula", ["time_per_pixel ~ 1", "time_per_pixel~1", "time_per_pixel ~ 1 + 0 + 1"])
def test_an_intercept_only_next_model_is_refused_while_factors_stay_free(laplacian, formula):
    model, space = laplacian
    proposal = propose_decision(model, 0.01, candidates=space)
    with pytest.raises(AnalysisError, match="estimates no factor while .*load_overlap.* stay free"):
        proposal.settle("ana", fix={"lws_y": 2}, formula=formula)
    with pytest.raises(AnalysisError, match="next formula: "):
        proposal.settle("ana", fix={"lws_y": 2}, formula="time_per_pixel ~ lws_y +")


def test_nothing_significant_proposes_nothing():
    case = r_case("pb12")
    model = LinearModel("Y ~ x2 + x4 + x6").fit(pd.DataFrame(case["data"]))
    decision = propose_decision(model, 0.001, best={"x2": 1, "x4": 1, "x6": 1})
    assert decision.proposed["fix"] == {} and decision.proposed["formula"] == "Y ~ x2 + x4 + x6"
    assert decision.explanation[0].startswith("no term has p < 0.001")


def test_proposal_needs_a_place_to_choose_levels_and_a_sane_threshold():
    model = LinearModel("Y ~ x1").fit(pd.DataFrame(r_case("pb12")["data"]))
    with pytest.raises(AnalysisError, match="candidate set"):
        propose_decision(model, 0.05)
    with pytest.raises(AnalysisError, match="threshold"):
        propose_decision(model, 5, best={"x1": 1})
