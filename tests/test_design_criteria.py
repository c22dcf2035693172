"""Design criteria equal R AlgDesign's (optFederov / eval.design) to 1e-9 relative."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.design import criteria, evaluate
from engine.model.formula import model_matrix
from tests.design_support import FULL2, LAPLACIAN, QUAD, TOY_FORMULA, grid_8f, toy_candidates

REL = 1e-9


@pytest.fixture(scope="module")
def dopt_8f(reference):
    case = json.loads((reference / "r_stats" / "dopt_8f.json").read_text())
    cand = pd.DataFrame({k: -1 + 0.2 * np.array(v) for k, v in case["candidates_level_index"].items()})
    return case, cand


def test_eval_design_of_the_selected_rows_matches_r(dopt_8f):
    case, cand = dopt_8f
    got = evaluate(case["model_formula"], cand.iloc[case["optFederov"]["rows"]], cand)
    r = case["eval_design_selected"]
    assert got.D == pytest.approx(r["result"]["determinant"], rel=REL)
    assert got.A == pytest.approx(r["result"]["A"], rel=REL)
    assert got.I == pytest.approx(r["result"]["I"], rel=REL)
    assert got.Ge == pytest.approx(r["unrounded"]["Geff"], rel=REL)
    assert got.Dea == pytest.approx(r["unrounded"]["Deffbound"], rel=REL)
    assert round(got.Ge, 3) == r["result"]["Geff"] and round(got.Dea, 3) == r["result"]["Deffbound"]
    assert got.D == pytest.approx(case["optFederov"]["D"], rel=REL)


def test_eval_design_of_a_fixed_poor_design_matches_r(dopt_8f):
    case, cand = dopt_8f
    got = evaluate(case["model_formula"], cand.iloc[:40], cand)
    r = case["fixed_design"]
    for ours, theirs in [(got.D, r["result"]["determinant"]), (got.A, r["result"]["A"]), (got.I, r["result"]["I"]),
                         (got.Ge, r["unrounded"]["Geff"]), (got.Dea, r["unrounded"]["Deffbound"])]:
        assert ours == pytest.approx(theirs, rel=REL)


def test_toy_optimum_criteria_match_r(reference):
    case = json.loads((reference / "r_stats" / "toy_dopt.json").read_text())
    cand = toy_candidates(reference)
    X = model_matrix(TOY_FORMULA, cand).X
    got = criteria(X[case["optFederov"]["rows"]], X)
    r = case["optFederov"]
    assert got.D == pytest.approx(r["D"], rel=REL)
    assert got.A == pytest.approx(r["A"], rel=REL)
    assert got.Ge == pytest.approx(r["Ge_unrounded_recomputed"], rel=REL)
    assert got.Dea == pytest.approx(r["Dea_unrounded_recomputed"], rel=REL)
    assert got.log_det == pytest.approx(np.log(r["D"]) * X.shape[1], rel=REL)


@pytest.fixture(scope="module")
def bench_runs(data):
    return pd.read_csv(data / "optfederov_bench" / "optfederov_bench_results.csv")


@pytest.mark.parametrize("case", ["8f_quadratic_N10000", "8f_full2nd_N10000", "8f_quadratic_N100000", "laplacian_dlmt_step1"])
def test_recorded_optfederov_runs_recompute_exactly(case, bench_runs, data):
    if case.startswith("8f"):
        cand = grid_8f(data, "candidates_8f_100000.csv.gz" if case.endswith("100000") else "candidates_8f_10000.csv.gz")
        formula = FULL2 if "full2nd" in case else QUAD
    else:
        cand = pd.read_csv(data / "laplacian" / "search_space.csv")
        formula = LAPLACIAN
    X = model_matrix(formula, cand).X
    for _, run in bench_runs[bench_runs["case"] == case].iterrows():
        rows = [int(r) - 1 for r in run["rows"].split()]
        got = criteria(X[rows], X)
        assert X.shape[1] == run["k"]
        assert got.D == pytest.approx(run["D_recomputed"], rel=REL)
        assert got.A == pytest.approx(run["A_recomputed"], rel=REL)
        assert got.Ge == pytest.approx(run["Ge_recomputed"], rel=REL)
        assert got.Dea == pytest.approx(run["Dea_recomputed"], rel=REL)
        assert got.D == pytest.approx(run["D"], rel=1e-9)


def test_a_singular_design_has_zero_d():
    X = np.column_stack([np.ones(6), np.arange(6.0)])
    got = criteria(X[[2, 2, 2]], X)
    assert got.D == 0.0 and got.A == np.inf and got.Ge == 0.0
