"""D-optimal search: exact optima on small problems, R's figures, augmentation, reproducibility."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from engine.design import optimal_design
from engine.errors import UserError
from engine.model.formula import model_matrix
from tests.design_support import QUAD, TOY_FORMULA, grid_8f, toy_candidates


def _all_subsets(X: np.ndarray, n: int, fixed: list[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Every n-subset of the rows of X (plus the ``fixed`` rows): (subsets, stacked M = Z'Z/N)."""
    others = [i for i in range(len(X)) if i not in fixed]
    subsets = np.array([list(fixed) + list(c) for c in itertools.combinations(others, n)])
    Z = X[subsets]
    return subsets, np.einsum("bij,bik->bjk", Z, Z) / subsets.shape[1]


def _brute_force(X: np.ndarray, n: int, criterion: str = "D", fixed: list[int] = ()) -> float:
    """Best AlgDesign criterion over every n-subset (vectorised: ~10⁶ subsets in seconds)."""
    _, M = _all_subsets(X, n, fixed)
    k = X.shape[1]
    sign, logdet = np.linalg.slogdet(M)
    ok = (sign > 0) & (logdet > -30 * k)
    if criterion == "D":
        return float(np.exp(logdet[ok].max() / k))
    inv = np.linalg.inv(M[ok])
    if criterion == "A":
        return float((np.trace(inv, axis1=1, axis2=2) / k).min())
    moments = X.T @ X / len(X)
    return float(np.einsum("bij,ji->b", inv, moments).min())


def _small_problems():
    rng = np.random.default_rng(7)
    grid = pd.DataFrame(np.array(list(itertools.product([-1.0, -0.5, 0.0, 0.5, 1.0], repeat=2))), columns=["a", "b"])
    scattered = pd.DataFrame(rng.uniform(-1, 1, size=(16, 3)), columns=["a", "b", "c"])
    mixed = pd.DataFrame({"a": np.tile([1.0, 2.0, 4.0, 8.0], 4), "g": np.repeat(["p", "q", "r", "s"], 4)})
    return [
        ("quadratic 5x5 grid", grid, "~ a + b + I(a^2) + I(b^2) + a:b", 7),
        ("linear, scattered", scattered, "~ a + b + c", 6),
        ("categorical and inverse", mixed, "~ g + a + I(1/a)", 7),
    ]


@pytest.mark.parametrize("name, cand, formula, n", _small_problems(), ids=[p[0] for p in _small_problems()])
def test_fedorov_reaches_the_brute_force_d_optimum(name, cand, formula, n):
    X = model_matrix(formula, cand).X
    best = _brute_force(X, n)
    for seed in range(3):
        result = optimal_design(cand, formula, n, seed=seed)
        assert result.criteria["D"] == pytest.approx(best, rel=1e-9)
        assert len(set(result.rows)) == n


@pytest.mark.parametrize("criterion", ["A", "I"])
def test_trace_criteria_reach_the_brute_force_optimum(criterion):
    _, cand, formula, n = _small_problems()[0]
    X = model_matrix(formula, cand).X
    best = _brute_force(X, n, criterion)
    result = optimal_design(cand, formula, n, seed=1, criterion=criterion)
    assert result.criteria[criterion] == pytest.approx(best, rel=1e-9)
    assert result.info["criterion"] == criterion


def test_toy_problem_reaches_the_exact_optimum_as_r(reference):
    cand = toy_candidates(reference)
    r = json.loads((reference / "r_stats" / "toy_dopt.json").read_text())["optFederov"]
    result = optimal_design(cand, TOY_FORMULA, 12, seed=1)
    assert result.criteria["D"] == pytest.approx(r["D"], rel=1e-9)
    assert result.criteria["A"] == pytest.approx(r["A"], rel=1e-9)
    assert result.info["k"] == 8 and result.info["candidates"] == 161_051
    # the paper's design: x1, x3, x5, x7 at ±1 and x8 at −1, 0, +1 four times each
    assert set(np.abs(result.design[["x1", "x3", "x5", "x7"]].to_numpy()).ravel()) == {1.0}
    assert sorted(result.design["x8"].value_counts().to_dict().items()) == [(-1.0, 4), (0.0, 4), (1.0, 4)]


def test_eight_factor_quadratic_beats_r(data, reference):
    cand = grid_8f(data, "candidates_8f_10000.csv.gz")
    r = json.loads((reference / "r_stats" / "dopt_8f.json").read_text())["optFederov"]
    result = optimal_design(cand, QUAD, 40, seed=1)
    assert result.criteria["D"] >= r["D"] * (1 - 1e-6)
    assert result.repeats == 5 and result.info["k"] == 17 and len(result.rows) == 40


def test_same_seed_gives_the_same_design():
    cand = _small_problems()[1][1]
    first = optimal_design(cand, "~ a + b + c + a:b", 8, seed=11, polish=2)
    again = optimal_design(cand, "~ a + b + c + a:b", 8, seed=11, polish=2)
    assert first.rows == again.rows
    pd.testing.assert_frame_equal(first.design, again.design)


def test_augmentation_keeps_forced_rows_and_does_not_charge_them():
    cand = _small_problems()[0][1]
    formula = "~ a + b + I(a^2) + I(b^2) + a:b"
    forced = [12, 3, 17]  # 12 is the centre (0, 0)
    result = optimal_design(cand, formula, 6, seed=0, forced=forced)
    assert result.forced == (3, 12, 17)
    assert result.rows[:3] == (3, 12, 17) and len(result.rows) == 9 and len(set(result.rows)) == 9
    assert set(result.new_rows).isdisjoint(forced) and len(result.new_rows) == 6
    # the new rows are the best 6 to add to the forced 3: brute force over the other 22 candidates
    best = _brute_force(model_matrix(formula, cand).X, 6, fixed=forced)
    assert result.criteria["D"] == pytest.approx(best, rel=1e-9)


def test_forced_configurations_missing_from_the_candidates_are_appended():
    cand = _small_problems()[0][1]
    measured = pd.DataFrame({"a": [0.25, 0.0], "b": [0.25, 0.0], "time": [1.0, 2.0]})
    result = optimal_design(cand, "~ a + b + a:b", 4, seed=0, forced=measured)
    assert result.info["candidates"] == 26  # 25 + the one new configuration
    assert result.forced == (12, 25)
    assert result.design.iloc[:2][["a", "b"]].to_numpy().tolist() == [[0.0, 0.0], [0.25, 0.25]]


def test_excluded_rows_are_never_chosen():
    cand = _small_problems()[0][1]
    corners = cand.index[(cand["a"].abs() == 1) & (cand["b"].abs() == 1)].tolist()
    result = optimal_design(cand, "~ a + b + a:b", 6, seed=0, exclude=corners)
    assert not set(result.rows) & set(corners)


def test_a_rare_level_still_gives_a_nonsingular_design():
    # one row in 400 carries level "z": random starts are almost always singular
    cand = pd.DataFrame({"x": np.linspace(0, 1, 400), "g": ["y"] * 399 + ["z"]})
    result = optimal_design(cand, "~ x + g", 3, seed=0, repeats=2)
    assert 399 in result.rows
    assert result.info["failed_starts"] >= 4
    assert result.criteria["D"] > 0


def test_a_space_is_enumerated_into_candidates():
    from engine.space.factors import Factor, Space

    space = Space([Factor("a", "integer", (1, 2, 3, 4)), Factor("b", "integer", (1, 2, 3))], ["a + b <= 6"])
    result = optimal_design(space, "~ a + b + I(a^2)", 5, seed=3)
    valid = space.enumerate()
    assert result.info["candidates"] == len(valid) == 11
    assert (result.design["a"] + result.design["b"] <= 6).all()


def test_a_huge_space_contributes_a_sample_of_its_valid_configurations():
    from engine.design import candidates_of
    from engine.space.factors import Factor, Space

    space = Space([Factor("a", "integer", tuple(range(12))), Factor("b", "integer", tuple(range(12)))], ["a != b"])
    sample = candidates_of(space, max_candidates=40, seed=2)
    assert len(sample) == 40 and not sample.duplicated().any() and (sample["a"] != sample["b"]).all()
    pd.testing.assert_frame_equal(sample, candidates_of(space, max_candidates=40, seed=2))
    result = optimal_design(space, "~ a + b", 4, seed=2, max_candidates=40)
    assert result.info["candidates"] == 40


@pytest.mark.parametrize(
    "formula, trials, message",
    [
        ("~ a + nope", 5, "term 'nope': unknown name 'nope'"),
        ("~ a + b + I(a^2) + I(b^2) + a:b", 4, "trials 4 is fewer than the 6 coefficients"),
        ("~ a + I(2*a)", 5, "terms a, I(2*a) are aliased"),
        ("b ~ a", 5, "has no response"),
        ("~ a + I(1/a)", 5, "not finite on candidate row"),
    ],
)
def test_hostile_inputs_give_one_line_errors(formula, trials, message):
    cand = _small_problems()[0][1]
    with pytest.raises(ValueError) as info:  # UserError, or the formula module's FormulaError
        optimal_design(cand, formula, trials)
    assert message in str(info.value).replace(" * ", "*") and "\n" not in str(info.value)


def test_fewer_candidate_rows_than_coefficients():
    cand = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]})
    with pytest.raises(UserError, match="3 rows are fewer than the 4 coefficients"):
        optimal_design(cand, "~ a + b + a:b", 4)


def test_bad_forced_row_and_criterion():
    cand = _small_problems()[0][1]
    with pytest.raises(UserError, match="forced: row 99 is not a candidate row"):
        optimal_design(cand, "~ a", 3, forced=[99])
    with pytest.raises(UserError, match="criterion 'E'"):
        optimal_design(cand, "~ a", 3, criterion="E")
    with pytest.raises(UserError, match="more than the 25 candidate rows"):
        optimal_design(cand, "~ a", 26)
