"""The fitted model's optimum over the valid space (issue 30 §1): exact equals brute force, the coordinate descent
finds the exact optimum where both can run, constraints and fixed factors hold, and what was done is recorded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import AnalysisError, LinearModel, predict, predicted_minimum
from engine.analysis.optimum import model_optimum
from engine.io.spec import TEMPLATES, parse_spec
from engine.runners.synthetic import evaluate
from engine.space.configs import config_keys
from engine.space.factors import Factor, Space

LEVELS = [round(-1 + 0.2 * i, 1) for i in range(11)]
SPACE = Space([Factor("a", "ordinal", LEVELS), Factor("b", "ordinal", LEVELS), Factor("c", "ordinal", LEVELS),
               Factor("d", "categorical", ("u", "v", "w")), Factor("e", "ordinal", (1, 2, 4, 8))],
              ["a + b <= 0.4", "c >= -0.6 or d != 'w'"])
FORMULA = "y ~ a + b + c + d + I(a^2) + I(b^2) + I(b^3) + I(c^2) + a:c + b:d"


def _model(seed: int) -> LinearModel:
    """A random polynomial truth (interactions, a categorical factor) fitted on 60 valid configurations."""
    rng = np.random.default_rng(seed)
    data = SPACE.sample(60, seed=seed)
    x = {n: data[n].to_numpy(dtype=float) for n in "abc"}
    shift = {"u": 0.0, "v": rng.normal(), "w": rng.normal()}
    data["y"] = (rng.normal(size=3) @ np.array([x["a"], x["b"], x["c"]]) + rng.normal() * x["a"] ** 2
                 + rng.normal() * x["b"] ** 3 + rng.normal() * x["c"] ** 2 + 2 * rng.normal() * x["a"] * x["c"]
                 + data["d"].map(shift).to_numpy() * (1 + x["b"]) + rng.normal(0, 0.1, 60))
    return LinearModel(FORMULA).fit(data)


def _brute(model: LinearModel, fixed: dict | None = None) -> tuple[dict, float]:
    grid = SPACE.fix(fixed or {}).enumerate()
    fit = predict(model, grid)["fit"].to_numpy()
    best = int(np.argmin(fit))
    return grid.iloc[best][list(model.variables_)].to_dict(), float(fit[best])


@pytest.mark.parametrize("seed", range(6))
def test_exact_equals_brute_force_and_the_descent_finds_it(seed):
    model = _model(seed)
    point, fit = _brute(model)
    exact = model_optimum(model, SPACE)
    assert exact.method == "exact" and exact.starts == 0 and exact.evaluated == exact.size == len(SPACE.fix({"e": 1}).enumerate())
    assert {k: exact.point[k] for k in point} == point and exact.fit == pytest.approx(fit, abs=1e-12)
    assert exact.undetermined == ("e",) and exact.point["e"] == 1  # not in the model: first valid level
    descent = model_optimum(model, SPACE, limit=1, seed=seed)
    assert descent.method == "coordinate descent" and descent.starts >= 32 and descent.seed == seed
    assert {k: descent.point[k] for k in point} == point and descent.fit == pytest.approx(fit, abs=1e-12)
    assert descent.size == 11**3 * 3  # the grid of a, b, c and d, before the constraints
    assert bool(SPACE.valid_mask(pd.DataFrame([descent.point]))[0])
    assert descent.predicted == pytest.approx(predict(model, pd.DataFrame([descent.point]))["predicted"].iloc[0])


def test_fixed_factors_hold_and_constraints_are_respected_where_the_free_optimum_is_invalid():
    model = _model(3)
    free_point, _ = _brute(model)
    fixed = {"a": 0.8, "d": "w"}  # a + b <= 0.4 forces b <= -0.4; d = w forces c >= -0.6
    point, fit = _brute(model, fixed)
    for limit in (10**6, 1):
        found = model_optimum(model, SPACE, fixed=fixed, limit=limit, reference={"e": 4})
        assert found.point["a"] == 0.8 and found.point["d"] == "w" and found.point["b"] <= -0.4 and found.point["c"] >= -0.6
        assert {k: found.point[k] for k in point} == point and found.fit == pytest.approx(fit, abs=1e-12)
        assert found.point["e"] == 4  # the reference's level of the factor the model does not use
    assert free_point != point
    unconstrained = Space(SPACE.factors)
    loose = model_optimum(model, unconstrained, fixed=fixed)
    assert loose.fit < fit - 1e-9 and not bool(SPACE.valid_mask(pd.DataFrame([loose.point]))[0])


def test_the_descent_is_deterministic_given_its_seed_and_records_what_it_did():
    model = _model(1)
    one, two = (model_optimum(model, SPACE, limit=1, seed=5, starts=8) for _ in range(2))
    assert one == two and one.starts >= 8 and "coordinate descent" in one.describe() and "not proven" in one.describe()
    assert "exact optimum over all" in model_optimum(model, SPACE).describe()
    assert one.to_dict()["method"] == "coordinate descent" and one.to_dict()["evaluated"] == one.evaluated


def test_listed_configurations_are_searched_exactly_and_ties_go_to_the_reference():
    model = _model(2)
    rows = SPACE.enumerate()
    found = model_optimum(model, rows)
    point, fit = _brute(model)
    assert found.method == "exact" and found.size == len(rows) and found.fit == pytest.approx(fit, abs=1e-12)
    assert {k: found.point[k] for k in point} == point and found.undetermined == ("e",)
    near = model_optimum(model, rows, reference={**found.point, "e": 8})
    assert near.point == {**found.point, "e": 8}  # the model cannot tell e's levels apart: the reference's
    with pytest.raises(AnalysisError, match="no configuration agrees"):
        model_optimum(model, rows, fixed={"a": 1.0, "b": 1.0})
    with pytest.raises(AnalysisError, match="not one of its levels"):
        model_optimum(model, SPACE, fixed={"a": 0.5})


def test_on_the_toy_page_model_the_optimum_beats_the_best_of_a_uniform_sample():
    """Issue 30 §1: with the Design page's defaults the proposal took the best of 20,000 sampled rows of 214 M."""
    spec = parse_spec(TEMPLATES["Paper toy problem (8 factors)"], "yaml")
    space = spec.space
    data = space.sample(62, seed=11)
    data["y"] = evaluate(spec.runner, data, config_keys(space, data))
    cubic = "y ~ " + " + ".join([f"x{i}" for i in range(1, 9)] + [f"I(x{i}^{p})" for p in (2, 3) for i in range(1, 9)])
    model = LinearModel(cubic).fit(data)
    found = model_optimum(model, space)
    sampled = predicted_minimum(model, space.sample(20_000, seed=0))
    assert found.method == "coordinate descent" and found.size == 11**8
    assert found.fit < sampled.fit - 0.5
    exact = model_optimum(model, space, fixed={k: found.point[k] for k in ("x1", "x2", "x3")})  # 11^5: exact
    assert exact.method == "exact" and exact.fit == pytest.approx(found.fit, abs=1e-12)


def test_a_categorical_level_the_fit_never_saw_is_never_proposed():
    """The model has no coefficient for d = w when no measurement had it: the search keeps to u and v."""
    from engine.analysis import propose_decision

    model = _model(4)
    data = model.data_.assign(y=model.y_raw_)
    unseen = LinearModel(FORMULA).fit(data[data["d"] != "w"].reset_index(drop=True))
    for limit in (10**6, 1):
        found = model_optimum(unseen, SPACE, limit=limit)
        assert found.point["d"] in ("u", "v")
    decision = propose_decision(unseen, 0.05, candidates=SPACE)
    assert decision.evidence["predicted_best"]["point"]["d"] in ("u", "v")
