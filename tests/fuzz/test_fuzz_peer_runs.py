"""Fuzz the peer-run reader (:func:`engine.compare.peers.read_peer_rows`, what ``bench/peers.py --load`` and the
Compare page's import read) and the comparison made from what it accepts (:func:`peer_comparison`): bytes, JSON of
any shape, runs with odd fields (NaN, negative, text, booleans, huge numbers), nesting deep, gzip, cut or flipped.
Each must be read or refused with one line; what is read makes no negative or NaN slowdown."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.compare.peers import peer_comparison, read_peer_rows
from engine.errors import UserError
from tests.fuzz.clean import parses_or_refuses
from tests.fuzz.test_fuzz_imports import JSON_LIKE, SCALAR, wrapped

SPACES = st.sampled_from(["s", "t", "convolution_milo_A4000", "a\nb", ""])
NUMBER = st.sampled_from([0, 1, 2, 20, -1, 2**31, 2**70, 1.0, 1.5, 0.5, -0.0, math.nan, math.inf, -math.inf, True, 1e308])
SLOWDOWN = st.floats(1, 10) | st.just(math.inf) | NUMBER
RUN = st.fixed_dictionaries(
    {"space": SPACES, "method": st.sampled_from(["KT pso", "Optuna TPE", "Tunelab AUTO"]),
     "rep": st.integers(0, 3), "trace": st.lists(st.floats(1, 10) | st.just(math.inf), max_size=5)},
    optional={"budget": st.integers(1, 5), "used": st.integers(0, 5), "cpu_s": st.floats(0, 1)},
)
ODD_RUN = st.fixed_dictionaries(
    {},
    optional={"space": SPACES | SCALAR, "method": st.just("m") | SCALAR, "rep": NUMBER | SCALAR,
              "trace": st.lists(SLOWDOWN, max_size=4) | JSON_LIKE, "budget": NUMBER | SCALAR, "used": NUMBER | SCALAR,
              "extra": JSON_LIKE},
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("peers")


def _reads_or_refuses(folder: Path, data: bytes, space: str, budget: int) -> None:
    path = folder / "peers.json"
    path.write_bytes(data)
    rows = parses_or_refuses(lambda: read_peer_rows(path), (UserError,))
    if rows is None:
        return
    comparison = parses_or_refuses(lambda: peer_comparison(rows, space, budget, 2.0), (UserError,))
    if comparison is not None:
        slowdowns = comparison.runs["slowdown"]
        assert (slowdowns >= 1).all() and not slowdowns.isna().any()


@st.composite
def runs(draw) -> bytes:
    rows = draw(st.lists(RUN | RUN | ODD_RUN, max_size=5) | JSON_LIKE)
    return draw(wrapped(json.dumps(rows, allow_nan=True).encode()))


@given(runs(), SPACES, st.integers(1, 6))
def test_peer_runs(folder, data, space, budget):
    _reads_or_refuses(folder, data, space, budget)


@given(st.binary(max_size=300))
def test_peer_runs_any_bytes(folder, data):
    _reads_or_refuses(folder, data, "s", 2)


@given(st.integers(0, 3000), st.sampled_from([("[", "]"), ('{"a": ', "}"), ('[{"trace": ', "}]")]),
       st.sampled_from(["1", "9" * 5000, "NaN", ""]))
def test_peer_runs_deep_nesting(folder, depth, brackets, leaf):
    text = brackets[0] * depth + leaf + brackets[1] * depth
    _reads_or_refuses(folder, text.encode(), "s", 2)
