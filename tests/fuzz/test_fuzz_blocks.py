"""Fuzz the basic-block inputs: hex as a user or a data file gives it (:func:`measure.refusal`, then the unroll
factors of a block it lets through), and a BHive data folder (the anchor sample, the may-alias list, the
application sources; plain, gzip-compressed, cut short or corrupted) read by :func:`bhive.select`. Each
must work or be refused with one line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import UserError
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.measure import Settings, refusal, unrolls_for
from tests.fuzz.clean import parses_or_refuses
from tests.fuzz.test_fuzz_imports import wrapped

REAL = ["4801c0", "488b00", "c4e275b8c2", "0f05", "ebfe", "48a30000000000200000", "", "4801C0", "0fff", "66"]
HEX = st.sampled_from(REAL) | st.binary(max_size=24).map(bytes.hex)
TEXT = HEX | st.text(max_size=12) | st.lists(HEX, max_size=4).map("".join)


@given(block=TEXT)
def test_hex_is_refused_with_a_reason_or_unrolled(block):
    reason = refusal(block)
    if reason is not None:
        assert isinstance(reason, str) and reason.strip() and "\n" not in reason
        return
    a, b = unrolls_for(block.strip().lower(), Settings())
    assert a > b >= 1


@st.composite
def bhive_file(draw, header: str = "") -> bytes:
    lines = draw(st.lists(st.tuples(TEXT, st.sampled_from(["", ",0.5", ",x", ",1e400", ",,"])), max_size=5))
    text = header + "".join(f"{h}{rest}\n" for h, rest in lines)
    return draw(wrapped(text.encode("utf-8", "surrogatepass")))


ANCHOR_HEADER = st.sampled_from(["hex,n_instr,haswell_mca19\n", "hex\n", "n_instr\n", "hex,hex\n", ""])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    (root / "bhive" / "sources").mkdir(parents=True)
    (root / "llvm_mca_anchor").mkdir()
    return root


@given(anchor=ANCHOR_HEADER.flatmap(bhive_file), alias=bhive_file(), source=bhive_file(),
       gzip_alias=st.booleans(), source_kind=st.sampled_from(["bhive", "anchor"]))
def test_a_data_folder_selects_blocks_or_is_refused(folder, anchor, alias, source, gzip_alias, source_kind):
    (folder / bhive.ANCHOR).write_bytes(anchor)
    (folder / "bhive" / "may-alias.csv.gz").write_bytes(gzip.compress(alias) if gzip_alias else alias)
    (folder / "bhive" / "sources" / "app.csv.gz").write_bytes(source)
    chosen = parses_or_refuses(lambda: bhive.select(source=source_kind, folder=folder), (UserError,))
    if chosen is not None:
        assert all(len(h) % 2 == 0 and set(h) <= set("0123456789abcdef") for h in chosen)  # blocks, lower-cased
