"""Prediction with intervals, argmin with ties and validity, and the constrained neighbourhood search."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from statsmodels.regression.linear_model import OLS

from engine.analysis import AnalysisError, LinearModel, argmin, predict, predicted_minimum, refine_neighbourhood

LEVELS = {"a": [1, 2, 3, 4, 5, 6, 7, 8], "b": [1, 2, 4, 8, 16, 32], "c": [False, True]}


def _objective(frame: pd.DataFrame) -> np.ndarray:
    return 5 + (frame["a"] - 6.2) ** 2 + 0.01 * (frame["b"] - 20) ** 2 + 0.8 * frame["c"]


@pytest.fixture(scope="module")
def lattice() -> pd.DataFrame:
    return pd.DataFrame(list(itertools.product(*LEVELS.values())), columns=list(LEVELS))


@pytest.fixture(scope="module")
def model(lattice) -> LinearModel:
    rng = np.random.default_rng(5)
    runs = lattice.sample(40, random_state=2).reset_index(drop=True)
    runs["t"] = _objective(runs) + 0.05 * rng.standard_normal(len(runs))
    return LinearModel("t ~ a + I(a^2) + b + I(b^2) + c").fit(runs)


def test_prediction_intervals_match_statsmodels(model, lattice):
    ours = predict(model, lattice, level=0.9)
    theirs = OLS(model.y_, model.X_).fit().get_prediction(np.column_stack([np.ones(len(lattice)), lattice["a"], lattice["a"] ** 2,
                                                            lattice["b"], lattice["b"] ** 2, lattice["c"]]))
    frame = theirs.summary_frame(alpha=0.1)
    np.testing.assert_allclose(ours["fit"], frame["mean"], rtol=1e-10)
    np.testing.assert_allclose(ours["lwr"], frame["obs_ci_lower"], rtol=1e-10)
    np.testing.assert_allclose(ours["upr"], frame["obs_ci_upper"], rtol=1e-10)
    np.testing.assert_array_equal(ours["predicted"], ours["fit"])


def test_log_model_predicts_on_the_response_scale(lattice):
    # 1% multiplicative noise: the interval must be a real interval, not an exact fit's rounding residue.
    noise = np.exp(0.01 * np.random.default_rng(3).standard_normal(len(lattice)))
    runs = lattice.assign(t=np.exp(0.1 * lattice["a"] - 0.02 * lattice["b"]) * noise)
    model = LinearModel("t ~ a + b", "log").fit(runs)
    pred = predict(model, lattice)
    np.testing.assert_allclose(pred["predicted"], np.exp(pred["fit"]), rtol=1e-12)
    np.testing.assert_allclose(pred["predicted"], np.exp(0.1 * lattice["a"] - 0.02 * lattice["b"]), rtol=0.01)
    width = (pred["upper"] - pred["lower"]) / pred["predicted"]
    assert (width > 0.02).all() and (width < 0.1).all()  # about +-2 sigma of the 1% noise
    assert (pred["lower"] < pred["predicted"]).all() and (pred["predicted"] < pred["upper"]).all()


def test_factors_outside_the_model_tie_and_the_first_row_wins(model, lattice):
    extra = lattice.merge(pd.DataFrame({"d": [0, 1, 2]}), how="cross")
    best = predicted_minimum(model, extra)
    assert len(best.ties) == 3
    assert best.position == min(best.ties)
    assert len({tuple(extra.iloc[i][["a", "b", "c"]]) for i in best.ties}) == 1


def test_validity_mask_or_callable_excludes_rows(model, lattice):
    pred = predict(model, lattice)
    free = argmin(pred, lattice)
    constraint = lambda f: (f["a"] + f["b"] <= 12).to_numpy()  # noqa: E731
    bounded = argmin(pred, lattice, constraint)
    assert constraint(pd.DataFrame([free.point]))[0] == False  # noqa: E712 - the free optimum is outside
    ok = constraint(lattice)
    expected = int(np.flatnonzero(ok)[np.argmin(pred["fit"].to_numpy()[ok])])
    assert bounded.position == expected
    assert argmin(pred, lattice, ok).position == expected
    with pytest.raises(AnalysisError, match="validity mask"):
        argmin(pred, lattice, ok[:-1])
    with pytest.raises(AnalysisError, match="no valid row"):
        argmin(pred, lattice, np.zeros(len(lattice), bool))


def test_refinement_reaches_the_best_valid_lattice_point(model, lattice):
    constraint = lambda f: (f["a"] + f["b"] <= 12).to_numpy()  # noqa: E731
    start = {"a": 1, "b": 1, "c": True}
    result = refine_neighbourhood(model, start, levels=LEVELS, valid=constraint)
    pred = predict(model, lattice)["fit"].to_numpy()
    ok = constraint(lattice)
    best = lattice.iloc[int(np.flatnonzero(ok)[np.argmin(pred[ok])])].to_dict()
    assert {k: result.point[k] for k in LEVELS} == best
    assert result.fit == pytest.approx(pred[ok].min())
    assert result.steps >= 1 and result.evaluated > result.steps
    assert bool(constraint(pd.DataFrame([result.point]))[0])


def test_refinement_accepts_a_space_and_keeps_fixed_factors(model):
    class Factor:
        def __init__(self, levels):
            self.levels = levels

    class Space:
        names = list(LEVELS)

        def factor(self, name):
            return Factor(LEVELS[name])

        def valid_mask(self, frame):
            return (frame["b"] <= 16).to_numpy()

    result = refine_neighbourhood(model, {"a": 1, "b": 1, "c": True}, space=Space(), fixed=["c"])
    assert result.point["c"] is True
    assert result.point["b"] <= 16 and result.point["a"] in (6, 7)
    with pytest.raises(AnalysisError, match="not a level"):
        refine_neighbourhood(model, {"a": 1.5, "b": 1, "c": True}, levels=LEVELS)


def test_categorical_candidates_with_fewer_levels_keep_the_fitted_coding():
    rng = np.random.default_rng(1)
    runs = pd.DataFrame({"k": list("abc") * 6, "x": rng.uniform(0, 1, 18)})
    runs["y"] = runs["k"].map({"a": 1.0, "b": 3.0, "c": 2.0}) + runs["x"] + 0.01 * rng.standard_normal(18)
    model = LinearModel("y ~ C(k) + x").fit(runs)
    everything = predict(model, runs)
    subset = predict(model, runs[runs["k"] != "a"])
    np.testing.assert_allclose(subset["fit"], everything.loc[runs["k"] != "a", "fit"], rtol=1e-12)
