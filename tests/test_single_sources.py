"""Facts with one source (issue 16): every layer reads the measurement statuses, the numpy-scalar
conversion, the maximin LHS and the term grammar from the same place."""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.errors import UserError
from engine.runners.status import STATUSES, Status


def test_every_layer_shares_one_status_list():
    import engine.io.table_import
    import engine.runners
    import engine.strategies
    import storage

    assert STATUSES == ("ok", "failed", "timeout", "invalid")
    assert [Status.OK, Status.FAILED, Status.TIMEOUT, Status.INVALID] == list(STATUSES)
    assert f"{Status.FAILED}" == "failed" and str(Status.OK) == "ok" and isinstance(Status.OK, str)
    for module in (engine.runners, engine.strategies, storage, engine.io.table_import):
        assert module.STATUSES is STATUSES, module.__name__


def test_the_shipped_schema_check_matches_the_status_list():
    from storage.schema import MIGRATIONS

    # a shipped migration is never edited, so it cannot read STATUSES: this keeps the two in step
    checks = [re.search(r"status\s+VARCHAR NOT NULL CHECK \(status IN \(([^)]*)\)\)", sql) for *_, sql in MIGRATIONS]
    listed = [tuple(s.strip().strip("'") for s in m.group(1).split(",")) for m in checks if m]
    assert listed == [STATUSES]


def test_plain_unwraps_numpy_scalars_only():
    from engine.io.jsonable import jsonable, plain

    assert type(plain(np.int64(4))) is int and type(plain(np.float32(0.5))) is float and plain(np.bool_(True)) is True
    array = np.arange(3)
    assert plain(array) is array and plain("a") == "a" and plain(None) is None
    assert jsonable({"x": np.int64(4), "y": [np.float64("nan")]}) == {"x": 4, "y": [None]}


def test_the_lhs_strategy_draws_the_design_modules_hypercube():
    from engine.design.lhs import lhs_unit
    from engine.space.factors import Factor, Space
    from engine.strategies import make_strategy

    space = Space([Factor("a", "integer", tuple(range(8))), Factor("b", "integer", tuple(range(5)))])
    strategy = make_strategy("LHS", space, 10, seed=3)
    batch = strategy.domain.frame(next(strategy._search()))
    unit = lhs_unit(strategy.points, 2, np.random.default_rng(3), strategy.iterations)
    assert batch.to_numpy().tolist() == np.rint(unit * [7, 4]).astype(int).tolist()


@pytest.mark.parametrize(("label", "parts"), [
    ("x", (("x", 1),)),
    ("I(x^2)", (("x", 2),)),
    ("I(x ** 3)", (("x", 3),)),  # formulaic's spelling of the same term
    ("I(1/x)", (("x", -1),)),
    ("I(1 / x):y", (("x", -1), ("y", 1))),
])
def test_one_term_grammar_reads_both_spellings(label, parts):
    from engine.model.choice import from_formula
    from engine.model.columns import parse_term
    from engine.model.terms import term_parts
    from engine.space.factors import Factor, Space

    assert term_parts(label, ["x", "y"]) == parts == parse_term(label, ["x", "y"]).parts
    space = Space([Factor("x", "integer", (1, 2, 4, 8)), Factor("y", "integer", (1, 2))])
    assert from_formula(f"~ {label}", space).n_terms == 1


@pytest.mark.parametrize(("label", "message"), [("log(x)", "are supported here"), ("I(z^2)", "unknown factor 'z'")])
def test_the_term_grammar_names_what_it_refuses(label, message):
    from engine.model.terms import term_parts

    with pytest.raises(UserError, match=re.escape(message)):
        term_parts(label, ["x"])
