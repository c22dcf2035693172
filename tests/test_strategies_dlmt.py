"""DLMT: its initial model, its Decision objects (auto, and steppable by a person), the fast
statistics against engine.analysis, and the exchange's designs against engine.design."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis import Decision, LinearModel, anova
from engine.compare.presets import PAPER_DLMT as PAPER
from engine.errors import UserError
from engine.model.columns import TermColumns, parse_term
from engine.strategies import drive, fastlm, make_strategy
from engine.strategies.design import doptimal_rows
from engine.strategies.dlmt import design_size, initial_terms
from tests.strategies_support import small_table


@pytest.fixture(scope="module")
def table():
    return small_table()


def test_initial_model_follows_the_levels_of_the_space(table):
    terms = initial_terms(table.space)
    # c (2 levels) and d (3) first; a spans powers of two -> inverse, no square; b has 8 levels -> square
    assert terms == ["c", "d", "a", "I(1/a)", "b", "I(b^2)"]
    assert initial_terms(table.space, quadratic_levels=0, inverse=False, order="space") == ["a", "b", "c", "d"]
    assert "I(b^3)" in initial_terms(table.space, cubic_levels=4)
    assert design_size("2k", 12, 11) == 24 and design_size("orio", 32, 31) == 38 and design_size(1.5, 12, 11) == 18
    with pytest.raises(UserError, match="size"):
        design_size("3k", 12, 11)


def test_auto_dlmt_yields_accepted_decisions_and_fixes_factors(table):
    s = drive(make_strategy("DLMT", table.domain, 60, seed=1, options={"response": "time", "refine": 0, **PAPER}), table.evaluate)
    assert s.decisions and all(isinstance(d, Decision) for d in s.decisions)
    first = s.decisions[0]
    assert first.status == "accepted" and first.by == "auto" and first.chosen == first.proposed
    record = first.to_record()
    assert record["formula"].startswith("time ~ ") and record["threshold"] == 0.05
    terms = [row["term"] for row in record["evidence"]["anova"]]
    assert terms[-1] == "Residuals" and set(terms[:-1]) == {"c", "d", "a", "I(1/a)", "b", "I(b^2)"}
    fixed = set().union(*(d.chosen["fix"] for d in s.decisions))
    assert fixed and fixed <= set(table.space.names)
    # every fixed factor is held in all later measurements of the search
    history = s.history()
    for d in s.decisions:
        step = d.evidence["step"]
        for factor, level in d.chosen["fix"].items():
            later = history[(history["step"] > step) & history["charged"]]
            assert (later[factor] == level).all()
    # This run ends at b = 2 (b = 2 and b = 4 tie for second best): a slowdown of exactly 1.1, on the
    # bound, so the bound gets the same rounding slack as test_strategies_search's MODEL_BASED limits.
    assert table.slowdown(s.best_value) <= 1.1 + 1e-12


def test_steppable_dlmt_waits_for_a_person_and_applies_an_edit(table):
    s = make_strategy("DLMT", table.domain, 80, seed=2, options={"auto": False, "refine": 0})
    while s.pending_decision is None:
        rows = s.ask_index()
        assert len(rows), "DLMT finished before proposing anything"
        s.tell_index(rows, *table.evaluate(rows))
    proposal = s.pending_decision
    assert isinstance(proposal, Decision) and proposal.status == "proposed"
    assert len(s.ask_index()) == 0  # nothing to measure until the decision is made
    with pytest.raises(UserError, match="accept, edit or reject"):
        s.decide(proposal)
    edited = proposal.edit("alice", fix={"d": 1}, formula="y ~ a + I(1/a) + b + I(b^2) + c", note="d=1 is known best")
    s.decide(edited)
    assert s.decisions[-1].status == "edited" and s.decisions[-1].by == "alice"
    drive(s, table.evaluate)  # rejecting or accepting later ones is the same call; here: stop at the next
    history = s.history()
    later = history[history["step"] > proposal.evidence["step"]]
    assert (later["d"] == 1).all()
    assert "d" not in {t for t in s.decisions[-1].chosen["formula"].split("~")[1].replace(" ", "").split("+")}


@pytest.mark.parametrize("options", [{}, {"rule": "factor"}, {"fix": "all"}, {"rule": "factor", "fix": "all"},
                                     {"rule": "factor", "adjust": "fdr"}])
def test_fast_and_full_analyses_make_the_same_decisions(table, options):
    fast = drive(make_strategy("DLMT", table.domain, 50, seed=4, options=options), table.evaluate)
    full = drive(make_strategy("DLMT", table.domain, 50, seed=4, options={**options, "analysis": "full"}), table.evaluate)
    assert [d.chosen["fix"] for d in fast.decisions] == [d.chosen["fix"] for d in full.decisions]
    assert [d.transform for d in fast.decisions] == [d.transform for d in full.decisions]
    assert full.history().equals(fast.history())
    assert any(line for d in full.decisions for line in d.explanation)


def test_fastlm_matches_engine_analysis(table):
    rng = np.random.default_rng(0)
    frame = table.table[table.table["status"] == "ok"].iloc[rng.choice(263, 30, replace=False)].reset_index(drop=True)
    terms = ["c", "d", "a", "I(1/a)", "b", "I(b^2)"]
    specs = [parse_term(t, table.space.names) for t in terms]
    X, slices = TermColumns(table.domain).matrix(specs, index=table.domain.from_frame(frame))
    y = frame["value"].to_numpy() * np.exp(rng.normal(0, 0.3, len(frame)))
    data = frame.assign(time=y)
    for transform in ("none", "boxcox", "boxcox-round"):
        ours = fastlm.fit(X, y, slices, transform)
        model = LinearModel("time ~ " + " + ".join(terms), transform=transform).fit(data)
        ref = anova(model)
        np.testing.assert_allclose(ours.f, ref["F value"].to_numpy()[:-1], rtol=1e-6)
        np.testing.assert_allclose(ours.p, ref["Pr(>F)"].to_numpy()[:-1], rtol=1e-6, atol=1e-12)
        if transform != "none":
            assert ours.box_cox.lam == pytest.approx(model.power_.lambda_, abs=1e-5)
            assert ours.box_cox.rounded == model.power_.lambda_rounded
    model = LinearModel("time ~ " + " + ".join(terms)).fit(data)
    assert fastlm.fit(X, y, slices).ncv_p == pytest.approx(model.ncv_untransformed_.p, rel=1e-9)


def test_exchange_designs_are_as_d_efficient_as_engine_design(table):
    from engine.design import criteria, optimal_design

    candidates = table.table[table.space.names]
    formula = "~ a + I(1/a) + b + I(b^2) + c + d"
    reference = optimal_design(candidates, formula, 14, seed=0)
    specs = [parse_term(t, table.space.names) for t in ["a", "I(1/a)", "b", "I(b^2)", "c", "d"]]
    X, _ = TermColumns(table.domain).matrix(specs, rows=np.arange(table.domain.n_candidates))
    rows = doptimal_rows(X, 14, rng=np.random.default_rng(0), repeats=3)
    assert len(set(rows.tolist())) == 14
    ours = criteria(X[rows], X)
    assert ours.D >= 0.97 * reference.criteria["D"]
    forced = doptimal_rows(X, 14, forced=np.array([0, 5]), rng=np.random.default_rng(1))
    assert {0, 5} <= set(forced.tolist()) and len(forced) == 14


def test_fastlm_type_ii_equals_car_with_aliased_terms_in_any_order():
    """Issue 12, class 3, in the strategies' fast fit: a term inside the others' span has 0 df and no test."""
    import pandas as pd

    rng = np.random.default_rng(2)
    data = pd.DataFrame({"x1": rng.integers(1, 9, 20) * 1.0, "x2": rng.integers(1, 9, 20) * 1.0, "x4": rng.uniform(size=20)})
    data["x3"] = data["x1"] + 2 * data["x2"]
    data["y"] = 1 + data["x1"] - data["x2"] + 3 * data["x4"] + rng.normal(size=20) * 0.1
    for order in (["x1", "x2", "x3", "x4"], ["x4", "x3", "x2", "x1"]):
        X = np.column_stack([np.ones(20), data[order].to_numpy()])
        ours = fastlm.fit(X, data["y"].to_numpy(), [slice(i, i + 1) for i in range(1, 5)], anova_type=2,
                          contains=[[] for _ in order])
        ref = anova(LinearModel("y ~ " + " + ".join(order)).fit(data), 2)
        assert ours.df.tolist() == ref["Df"].tolist()[:-1] == [0 if t != "x4" else 1 for t in order]
        np.testing.assert_allclose(ours.f, ref["F value"].to_numpy()[:-1], rtol=1e-9)
        np.testing.assert_allclose(ours.p, ref["Pr(>F)"].to_numpy()[:-1], rtol=1e-9)


def test_dlmt_spends_the_budget_growing_designs_and_searching_locally(table):
    """A step that fixes nothing measures new runs, and the budget left after the model goes to a local search."""
    s = drive(make_strategy("DLMT", table.domain, 120, seed=3), table.evaluate)
    assert s.used == 120
    steps = s.history().groupby("step").size()
    assert steps.index.max() == max(entry["step"] for entry in s.log) + 1  # the local search's step
    # a threshold nothing meets: the first step fixes nothing, so the second design grows by half (7 new runs);
    # the paper's protocol refits the same 14 runs plus one
    strict = {"threshold": 1e-12, "steps": 2}
    grown = drive(make_strategy("DLMT", table.domain, 120, seed=3, options=strict), table.evaluate).log
    same = drive(make_strategy("DLMT", table.domain, 120, seed=3, options={**strict, **PAPER}), table.evaluate)
    assert [e["design"] - e["reused"] for e in grown] == [14, 7]
    assert [e["design"] - e["reused"] for e in same.log] == [14, 1] and same.used < 120


def test_a_fix_contradicted_by_a_better_measurement_is_released(table):
    s = make_strategy("DLMT", table.domain, 60, seed=0)
    names = table.space.names
    a = names.index("a")
    rows = table.domain.index[np.random.default_rng(0).choice(len(table.domain.index), 60, replace=False)]
    values, statuses = table.evaluate(rows)
    s.tell_index(rows, values, statuses)
    ok = statuses == "ok"
    # a level the best measurement does not have, whose own best is more than 5% worse
    worse = [v for v in np.unique(rows[:, a]) if values[ok & (rows[:, a] == v)].min() > 1.05 * values[ok].min()]
    s.fixed = {a: int(worse[0])}
    s.terms = [t for t in s.terms if "a" not in t.factors]
    entry = {}
    s._release(entry)
    assert entry["released"] == ["a"] and a not in s.fixed and a in s.released
    assert {t.name for t in s.terms} >= {"a", "I(1/a)"}
    s.fixed = {a: int(worse[0])}
    again = {}
    s._release(again)
    assert "released" not in again  # each factor once


@pytest.mark.parametrize("then", ["forest", "local", "bo", "tpe"])
def test_auto_hands_the_budget_dlmt_leaves_to_a_search_without_a_model(table, then):
    s = drive(make_strategy("AUTO", table.domain, 100, seed=2, options={"then": then}), table.evaluate)
    history = s.history()
    model_steps = max(entry["step"] for entry in s.log)
    assert s.used == 100 and s.decisions and (history["step"] > model_steps).sum() > 0
    assert table.slowdown(s.best_value) <= 1.05


def test_auto_pins_the_dlmt_options_it_does_not_offer(table):
    s = make_strategy("AUTO", table.domain, 40, seed=0)
    assert s.spend and s.refine == 0
    with pytest.raises(UserError, match="AUTO option 'spend' false: not an option of AUTO"):
        make_strategy("AUTO", table.domain, 40, seed=0, options={"spend": False})


def test_a_design_the_budget_cannot_pay_for_shrinks_so_that_its_prediction_is_measured(table):
    # 7 coefficients want 14 runs; 10 pay for 9 runs with 3 residual df once I(b^2) goes, and the prediction
    s = drive(make_strategy("DLMT", table.domain, 10, seed=3), table.evaluate)
    first = s.log[0]
    assert first["design"] == 9 and "I(b^2)" not in first["terms"] and "I(1/a)" in first["terms"]
    assert s.decisions and s.used == 10
    assert (s.history()["step"] == 1).sum() == 10  # the design and its predicted best
    paper = drive(make_strategy("DLMT", table.domain, 10, seed=3, options=PAPER), table.evaluate)
    assert paper.log[0]["design"] == 14 and not paper.decisions  # the paper's protocol: cut short, never fitted


def test_the_predicted_best_keeps_the_best_measurement_s_levels_where_the_model_is_silent(table):
    s = make_strategy("DLMT", table.domain, 40, seed=0)
    cand = table.domain.index
    best = cand[int(np.argmax((cand[:, 0] == 3) & (cand[:, 1] == 1) & (cand[:, 2] == 1) & (cand[:, 3] == 0)))]
    values, statuses = table.evaluate(best[None, :])
    s.tell_index(best[None, :], values, statuses)
    predicted = np.where(cand[:, 0] == 2, 1.0, 2.0)  # a model of factor a alone: every a = 4 ties
    chosen = s._predicted_best(cand, predicted)
    assert chosen[0] == 2 and list(chosen[1:]) == list(best[1:])


def test_auto_with_a_local_hand_off_and_no_patience_measures_what_dlmt_measures(table):
    dlmt = drive(make_strategy("DLMT", table.domain, 50, seed=4), table.evaluate).history()
    auto = make_strategy("AUTO", table.domain, 50, seed=4, options={"then": "local", "patience": 0})
    assert dlmt[table.space.names].equals(drive(auto, table.evaluate).history()[table.space.names])


def test_dlmt_steps_end_after_patience_steps_that_find_nothing_better(table):
    s = drive(make_strategy("DLMT", table.domain, 120, seed=0, options={"patience": 1}), table.evaluate)
    history = s.history()
    stalled = [e for e in s.log if "stalled" in e]
    assert len(stalled) == 1 and stalled[0] is s.log[-1]
    step = stalled[0]["step"]
    before = history[history["step"] < step]
    assert before["step"].iloc[-1] == step - 1  # the step before ended with its predicted best, no better than the rest
    assert before["value"].iloc[-1] >= before["value"].iloc[:-1].min()
    assert s.used == 120 and (history["step"] > step).sum() > 0  # the local search took the rest
    assert make_strategy("DLMT", table.domain, 40, seed=0).patience == 0  # DLMT's own default: every step
    assert make_strategy("AUTO", table.domain, 40, seed=0).patience == 1


def test_a_space_filling_prefix_is_measured_first_and_the_first_design_keeps_it(table):
    s = drive(make_strategy("DLMT", table.domain, 60, seed=5, options={"prefix": 6}), table.evaluate)
    history = s.history()
    first = history.iloc[:6]
    assert (first["step"] == 0).all() and (history["step"].iloc[6:] >= 1).all()
    assert len(first[table.space.names].drop_duplicates()) == 6
    for name in ("a", "b"):  # a Latin hypercube's 6 strata: spread over the levels, not piled at the extremes
        assert first[name].nunique() >= 4
    plain = drive(make_strategy("DLMT", table.domain, 60, seed=5), table.evaluate)
    assert plain.log[0]["reused"] == 0
    ok = int((first["status"] == "ok").sum())
    assert s.log[0]["reused"] == ok and s.log[0]["design"] == plain.log[0]["design"]  # the same runs, ok ones given
    resumed = make_strategy("DLMT", table.domain, 60, seed=5, options={"prefix": 6})
    rows = table.domain.index[:3]
    resumed.tell_index(rows, *table.evaluate(rows))
    drive(resumed, table.evaluate)
    assert (resumed.history()["step"].iloc[3:] >= 1).all()  # what was measured before stands in for the prefix


def test_a_subspace_measured_whole_ends_the_steps_instead_of_refitting_it(table):
    # a = 32 leaves 18 configurations, all measured: the next design would be those 18 again and measure nothing
    s = make_strategy("DLMT", table.domain, 40, seed=0)
    s.fixed = {0: 5}
    s.terms = [t for t in s.terms if "a" not in t.factors]
    rows = table.domain.index[table.domain.index[:, 0] == 5]
    s.tell_index(rows, *table.evaluate(rows))
    drive(s, table.evaluate)
    assert len(rows) == 18 and s.log[0].get("exhaustive") and "design" not in s.log[0]
    assert s.used == 40 and (s.history()["step"] > 1).sum() == 40 - 18  # the local search took the budget left


def _toy_step(options: dict):
    """A DLMT over the toy's space, full cubic, told the 60 runs of the R reference data (tests/reference/r/
    factor_tests.json), and its first step's analysis and decision."""
    import json

    import pandas as pd

    from engine.io.paths import REPO_ROOT
    from engine.io.spec import TEMPLATES, parse_spec
    from engine.strategies.domain import Domain

    space = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml").space
    data = pd.DataFrame(json.loads((REPO_ROOT / "tests" / "reference" / "r" / "factor_tests.json").read_text())["data"])
    cubic = [f"x{i}" for i in range(1, 9)] + [f"I(x{i}^{p})" for p in (2, 3) for i in range(1, 9)]
    s = make_strategy("DLMT", Domain(space), 100, seed=0,
                      options={"formula": cubic, "transform": "none", "fix": "all", **options})
    runs = space.to_level_index(data)
    s.tell_index(runs, data["y"].to_numpy())
    analysis = s._analyse(runs, None)  # the runs as the subspace's candidates: all of them are fitted
    return data, cubic, analysis, s._decision(*analysis)


def test_the_factor_rule_leaves_an_inert_factor_with_one_lucky_term_free():
    """Issue 30 §2 in the strategy: I(x6^2) has p = 0.005 on these runs (x6 is inert); the paper's term rule fixes
    x6, the whole-factor test (Holm over the 8 factors) does not, and its p-values are engine.analysis's."""
    from engine.analysis.factor_tests import factor_tests

    _, _, _, term = _toy_step({"rule": "term"})
    assert "x6" in term.proposed["fix"]
    data, cubic, analysis, factor = _toy_step({"rule": "factor"})
    assert not {"x2", "x4", "x6"} & set(factor.proposed["fix"]) and {"x1", "x3", "x5"} <= set(factor.proposed["fix"])
    assert factor.rule == "factor" and any(line.startswith("x6 (x6, I(x6^2), I(x6^3)): ") and line.endswith("left free")
                                          for line in factor.explanation)
    ours = analysis[2].set_index("factor")
    reference = factor_tests(LinearModel("y ~ " + " + ".join(cubic)).fit(data)).set_index("factor")
    np.testing.assert_allclose(ours.loc[reference.index, ["F value", "Pr(>F)", "adjusted p"]].to_numpy(dtype=float),
                               reference[["F value", "Pr(>F)", "adjusted p"]].to_numpy(dtype=float), rtol=1e-9)
    assert factor.evidence["factor_tests"][0]["factor"] == reference.index[0]


def test_the_strategies_fix_by_the_term_rule_unless_told_the_factor_rule(table):
    """bench/decisions.py chose the default: the term rule measured better configurations on the toy (-8.80 against
    -8.53, 100 seeds) and the same on the Laplacian; the page's proposal tests whole factors."""
    assert PAPER["rule"] == "term"
    assert make_strategy("DLMT", table.domain, 40, seed=0, options=PAPER).rule == "term"
    assert make_strategy("AUTO", table.domain, 40, seed=0).rule == "term"
    assert make_strategy("DLMT", table.domain, 40, seed=0).rule == "term"
    dlmt = make_strategy("DLMT", table.domain, 40, seed=0, options={"rule": "factor"})
    assert (dlmt.rule, dlmt.adjust) == ("factor", "holm")
    with pytest.raises(UserError, match="rule"):
        make_strategy("DLMT", table.domain, 40, seed=0, options={"rule": "terms"})
