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


def test_the_term_rule_fixes_every_factor_of_a_significant_term_at_the_predicted_best(laplacian):
    model, space = laplacian
    decision = propose_decision(model, 0.05, candidates=space, rule="term")
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
    assert decision.explanation[0] == "no factor has Holm-adjusted p < 0.001: nothing to fix; the model stays as it is"
    assert all(line.endswith("— left free") for line in decision.explanation[1:]) and len(decision.explanation) == 4
    term = propose_decision(model, 0.001, best={"x2": 1, "x4": 1, "x6": 1}, rule="term")
    assert term.explanation == ("no term has p < 0.001: nothing to fix; the model stays as it is",)


def test_proposal_needs_a_place_to_choose_levels_and_a_sane_threshold():
    model = LinearModel("Y ~ x1").fit(pd.DataFrame(r_case("pb12")["data"]))
    with pytest.raises(AnalysisError, match="candidate set"):
        propose_decision(model, 0.05)
    with pytest.raises(AnalysisError, match="threshold"):
        propose_decision(model, 5, best={"x1": 1})


def test_the_factor_rule_tests_each_factor_s_terms_together_and_adjusts_across_factors(laplacian):
    """Laplacian step 1: lws_y alone survives Holm's adjustment over the 7 factors (elements_number: p = 0.0087,
    adjusted 0.052); every factor's line gives F, its df, the raw and the adjusted p."""
    model, space = laplacian
    decision = propose_decision(model, 0.05, candidates=space)
    tests = pd.DataFrame(decision.evidence["factor_tests"]).set_index("factor")
    assert decision.proposed["fix"] == {"lws_y": 1} and tests.loc["lws_y", "adjusted p"] < 0.05
    assert 0.05 < tests.loc["elements_number", "adjusted p"] < 0.06 and tests.loc["elements_number", "Pr(>F)"] < 0.01
    assert decision.explanation[0].startswith("lws_y (lws_y, I(1/lws_y)): F = 16.4 on 2 and 12 df, p = 0.00037, "
                                              "Holm-adjusted p = 0.0026 — fix at 1, predicted -99% time_per_pixel")
    assert len(decision.explanation) == len(model.variables_) == len(tests)
    assert decision.proposed["formula"] == decision.next_formula({"lws_y": 1})
    assert Decision.from_record(json.loads(json.dumps(decision.to_record()))).rule == "factor"


def test_the_proposal_s_levels_are_the_model_s_optimum_over_the_space_not_a_sample_s_best():
    """Issue 30 §1: the Design page's defaults (D-optimal, full cubic, 50 runs + the 12 screening runs) then
    Analyze proposed the best of 20,000 sampled rows of 214 M configurations."""
    from engine.analysis.optimum import model_optimum
    from engine.io.spec import TEMPLATES, parse_spec
    from engine.runners.synthetic import evaluate
    from engine.space.configs import config_keys

    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    data = spec.space.sample(62, seed=3)
    data["y"] = evaluate(spec.runner, data, config_keys(spec.space, data))
    cubic = "y ~ " + " + ".join([f"x{i}" for i in range(1, 9)] + [f"I(x{i}^{p})" for p in (2, 3) for i in range(1, 9)])
    model = LinearModel(cubic).fit(data)
    decision = propose_decision(model, 0.05, candidates=spec.space)
    optimum = model_optimum(model, spec.space)
    best = decision.evidence["predicted_best"]
    assert best["point"] == optimum.point and best["predicted"] == optimum.predicted
    assert best["method"] == "coordinate descent" and best["evaluated"] == optimum.evaluated and best["starts"] >= 32
    assert decision.proposed["fix"] and decision.proposed["fix"] == {k: optimum.point[k] for k in decision.proposed["fix"]}
    sampled = predicted_minimum(model, spec.space.sample(20_000, seed=0))
    assert optimum.predicted < sampled.predicted - 0.1  # here 0.42 lower
    step2 = propose_decision(model, 0.05, candidates=spec.space, fixed=decision.proposed["fix"])
    assert step2.evidence["predicted_best"]["method"] == "exact"  # 11^(8 - fixed) configurations left
    assert {k: step2.evidence["predicted_best"]["point"][k] for k in decision.proposed["fix"]} == decision.proposed["fix"]
