from engine.model.choice import TermChoice, default_choice, from_formula, to_formula
from engine.space.factors import Factor, Space

SPACE = Space([
    Factor("tile", "ordinal", (1, 2, 4, 8, 16, 32)),
    Factor("unroll", "integer", (1, 2, 3)),
    Factor("vec", "boolean", None),
    Factor("opt", "categorical", ("O2", "O3")),
    Factor("fixed", "integer", (4,)),
])


def test_default_model_follows_the_dlmt_rules():
    choice = default_choice(SPACE)
    assert choice.linear == ["tile", "unroll", "vec", "opt"]  # single-level 'fixed' is left out
    assert choice.quadratic == ["tile", "unroll"]
    assert choice.cubic == ["tile"]  # 'unroll' has only 3 levels
    assert choice.inverse == ["tile"]  # powers of two


def test_formula_and_checkboxes_round_trip():
    choice = TermChoice(linear=["tile", "vec"], quadratic=["tile"], inverse=["tile"],
                        interactions=[("tile", "unroll")], extra=["log(unroll)"])
    formula = to_formula(choice, "time")
    assert formula == "time ~ tile + vec + I(tile^2) + I(1/tile) + tile:unroll + log(unroll)"
    back = from_formula(formula, SPACE)
    assert back.linear == ["tile", "vec"] and back.quadratic == ["tile"] and back.inverse == ["tile"]
    assert back.interactions == [("tile", "unroll")] and back.extra == ["log(unroll)"]


def test_empty_choice_is_intercept_only():
    assert to_formula(TermChoice()) == "~ 1"


def test_next_step_folds_the_decisions_log():
    import json

    import pandas as pd

    from engine.analysis.study_data import next_step, restrict

    log = pd.DataFrame({
        "outcome": ["accepted", "rejected", "edited"],
        "chosen": [json.dumps({"fix": {"tile": 4}, "formula": "y ~ unroll + vec"}), None,
                   json.dumps({"fix": {"unroll": 2}, "formula": "y ~ vec"})],
    })
    state = next_step(log)
    assert state.fixed == {"tile": 4, "unroll": 2} and state.formula == "y ~ vec" and state.step == 3
    assert next_step(log.iloc[:0]).step == 1
    candidates = SPACE.enumerate()
    kept = restrict(candidates, state.fixed)
    assert len(kept) and (kept["tile"] == 4).all() and (kept["unroll"] == 2).all()
