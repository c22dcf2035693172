"""Fuzz DiffTune's data-set folders (:func:`engine.surrogates.difftune.dataset.load_dataset` and
:func:`~engine.surrogates.difftune.dataset.prepare_folder`): manifests of random or edited lines, shards
missing, extra, cut, flipped or swapped, values out of range, and manifests that tell the truth about forged
files (so the checks past the hashes run too). Each must load or be refused with one line. One folder per
target, emptied and rewritten per example; the shards' bytes are made once."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.surrogates.difftune.dataset import COLUMNS, MANIFEST, load_dataset, prepare_folder
from tests.fuzz.clean import damage, parses_or_refuses

BLOCKS, ROWS = 3, 5
ODD = (st.none() | st.booleans() | st.integers() | st.sampled_from([-1, 2**31, 2**62, 10**30]) | st.floats()
       | st.text(max_size=6))
JSON_LIKE = st.recursive(ODD, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                         max_leaves=8)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _rows(start: int, **change: int) -> pd.DataFrame:
    frame = pd.DataFrame({"block": np.arange(start, start + ROWS) % BLOCKS, "seed": np.arange(start, start + ROWS),
                          "cycles": np.arange(100, 100 + ROWS)}).astype(COLUMNS)
    for column, value in change.items():
        frame.loc[2, column] = value
    return frame


#: File contents a folder may get: the three true shards, forged ones (bad values, other columns or types, no
#: rows, a bomb-shaped footer is tested elsewhere) and garbage.
GOOD = [_parquet(_rows(start)) for start in range(0, 3 * ROWS, ROWS)]
FORGED = [_parquet(_rows(0, block=BLOCKS)), _parquet(_rows(0, block=-1)), _parquet(_rows(0, seed=99)),
          _parquet(_rows(0, cycles=0)), _parquet(_rows(0).astype("int64")), _parquet(_rows(0).astype(float)),
          _parquet(_rows(0).head(0)), _parquet(pd.DataFrame({"x": ["a"] * ROWS})),
          _parquet(_rows(0).rename(columns={"cycles": "cycle"})), _parquet(_rows(0)[["seed", "block", "cycles"]]),
          _parquet(pd.DataFrame({"block": pd.array([0, None, 1, 2, 0], dtype="Int32"), "seed": np.arange(ROWS),
                                 "cycles": np.ones(ROWS, dtype=np.int32)})),
          b"", b"PAR1", b"PAR1" + bytes(40) + b"PAR1", b"not parquet"]
NAMES = [f"part-{start:010d}.parquet" for start in range(0, 4 * ROWS, ROWS)]


def _line(name: str, start: int, data: bytes) -> dict:
    return {"file": name, "start": start, "rows": ROWS, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@st.composite
def contents(draw) -> bytes:
    """A true shard, a forged one or garbage, maybe cut short or with a byte flipped."""
    data = draw(st.sampled_from(GOOD + FORGED))
    return damage(draw, data, draw(st.sampled_from(["as is", "as is", "cut", "flip"])))


def _one_in(draw, n: int) -> bool:
    """True one time in ``n`` (Hypothesis leans to a sample's first values: the ordinary case)."""
    return bool(draw(st.sampled_from(range(n))) == n - 1)


@st.composite
def folders(draw) -> dict[str, bytes]:
    """A folder's files: the first shards (true, missing, replaced, cut, flipped), maybe extra files, and a
    manifest listing them truly, stale, or a forger's truth, maybe edited, cut or missing."""
    files: dict[str, bytes] = {}
    listed = draw(st.integers(0, 3))
    for i, name in enumerate(NAMES[:listed]):
        if not _one_in(draw, 8):
            files[name] = draw(contents()) if _one_in(draw, 3) else GOOD[i]
    if _one_in(draw, 4):
        for _ in range(draw(st.integers(1, 2))):
            files[draw(st.sampled_from([*NAMES, "part-x.parquet", "extra.parquet", ".part-0000000005.parquet.tmp",
                                        "notes.txt"]))] = draw(contents())
    head = {"tunelab": "difftune data set", "version": 1, "blocks": BLOCKS}
    if _one_in(draw, 8):
        head[draw(st.sampled_from(["blocks", "version", "tunelab", "x"]))] = draw(JSON_LIKE)
    truthful = draw(st.booleans())  # a forger who rewrites the manifest to match the files
    lines = [json.dumps(head)] + [json.dumps(_line(name, i * ROWS, files[name] if truthful and name in files
                                                   else GOOD[i])) for i, name in enumerate(NAMES[:listed])]
    for _ in range(draw(st.integers(1, 2)) if _one_in(draw, 3) else 0):
        at = draw(st.integers(0, len(lines)))
        how = draw(st.sampled_from(["drop", "repeat", "odd", "field"]))
        if how == "drop" and at < len(lines):
            del lines[at]
        elif how == "repeat" and at < len(lines):
            lines.insert(at, lines[at])
        elif how == "odd":
            lines.insert(at, draw(st.text(max_size=20) | JSON_LIKE.map(json.dumps)))
        elif at < len(lines) and lines[at].startswith("{"):
            line = json.loads(lines[at])
            line[draw(st.sampled_from(["file", "start", "rows", "bytes", "sha256", "x"]))] = draw(JSON_LIKE)
            lines[at] = json.dumps(line)
    text = "".join(f"{line}\n" for line in lines)
    if _one_in(draw, 4):
        text = text[: draw(st.integers(0, len(text)))]
    if not _one_in(draw, 10):
        files[MANIFEST] = text.encode("utf-8", "surrogatepass")
    return files


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-dataset") / "d"


def _fill(folder, files: dict[str, bytes]) -> None:
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)


#: Sample counts and block counts the store may record: mostly what the folder's shards hold.
DONE = st.sampled_from([0, ROWS, 2 * ROWS, 3 * ROWS]) | st.integers(0, 4 * ROWS)
STORED_BLOCKS = st.just(BLOCKS) | st.integers(1, 2 * BLOCKS)


@given(folders(), st.none() | DONE, st.none() | STORED_BLOCKS)
def test_load_a_folder(folder, files, samples, blocks):
    _fill(folder, files)
    loaded = parses_or_refuses(lambda: load_dataset(folder, samples, blocks))
    if loaded is not None:
        assert list(loaded.columns) == list(COLUMNS) and loaded["seed"].tolist() == list(range(len(loaded)))
        assert loaded["block"].between(0, BLOCKS - 1).all() and (loaded["cycles"] >= 1).all()


@given(folders(), DONE, STORED_BLOCKS)
def test_prepare_a_folder_then_load_it(folder, files, done, blocks):
    _fill(folder, files)
    if parses_or_refuses(lambda: prepare_folder(folder, blocks, done)) is not None:
        loaded = parses_or_refuses(lambda: load_dataset(folder, done, blocks))  # refused: a forger's values
        assert loaded is None or len(loaded) == done
