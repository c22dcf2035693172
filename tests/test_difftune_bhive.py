"""Selecting BHive blocks: the anchor sample first, may-alias blocks never, then the rest in a fixed order."""

from __future__ import annotations

import gzip

import pytest

from engine.errors import UserError
from engine.io.paths import data_dir
from engine.surrogates.difftune import bhive


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "bhive" / "sources").mkdir(parents=True)
    (tmp_path / "llvm_mca_anchor").mkdir()
    (tmp_path / "llvm_mca_anchor" / bhive.ANCHOR.name).write_text("hex,n_instr,haswell_mca19\n90,1,100\n4801c3,1,100\n")
    for name, rows in (("a.csv.gz", "90,0.1\n4801d8,0.2\n"), ("b.csv.gz", "4801c3,0.3\nc3c3,0.1\n0f05,0.5\n")):
        with gzip.open(tmp_path / "bhive" / "sources" / name, "wt") as handle:
            handle.write(rows)
    with gzip.open(tmp_path / "bhive" / "may-alias.csv.gz", "wt") as handle:
        handle.write("4801c3\nc3c3\n")
    return tmp_path


def test_the_anchor_comes_first_and_may_alias_blocks_never(folder):
    assert bhive.select(source="anchor", folder=folder) == ["90"]
    chosen = bhive.select(folder=folder)
    assert chosen[0] == "90" and sorted(chosen[1:]) == ["0f05", "4801d8"]
    assert bhive.select(folder=folder) == chosen  # a fixed order: a resumed run picks the same blocks
    assert bhive.select(2, folder=folder) == chosen[:2]
    assert bhive.distinct_blocks(folder) == ["0f05", "4801c3", "4801d8", "90", "c3c3"]


def test_bad_arguments_are_one_line(folder, tmp_path_factory):
    with pytest.raises(UserError, match="source 'spec': expected one of anchor, bhive"):
        bhive.select(source="spec", folder=folder)
    with pytest.raises(UserError, match="limit 0: must be at least 1"):
        bhive.select(0, folder=folder)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(UserError, match="no bhive/ in it"):
        bhive.select(folder=empty)


def test_the_real_anchor_sample():
    if data_dir() is None or not (data_dir() / bhive.ANCHOR).is_file():
        pytest.skip("the data folder is absent")
    sample = bhive.anchor()
    assert len(sample) == 2000 and {f"{a}_mca19" for a in bhive.ANCHOR_ARCHS} <= set(sample.columns)
    chosen = bhive.select(source="anchor")
    assert 1500 < len(chosen) < 2000 and not set(chosen) & bhive.may_alias()


def test_availability_is_said_not_raised(folder, tmp_path_factory):
    assert bhive.available(folder)
    assert not bhive.available(tmp_path_factory.mktemp("nothing"))


@pytest.mark.parametrize(("where", "content", "words"), [
    ("bhive/sources/a.csv.gz", gzip.compress(b"90,0.1\nmov %rax,%rbx,0.2\n", mtime=0), r"BHive file a\.csv\.gz line 2: .* not a basic block"),
    ("bhive/sources/a.csv.gz", b"not gzip at all \xff\xfe", "not UTF-8"),
    ("bhive/may-alias.csv.gz", gzip.compress(b"0" * (65 << 20), mtime=0), "inflates to more than"),  # a gzip bomb, bounded
    ("llvm_mca_anchor/" + bhive.ANCHOR.name, b"hex,haswell_mca19\n90,fast\n", "line 2: haswell_mca19 'fast' is not a number"),
    ("llvm_mca_anchor/" + bhive.ANCHOR.name, b"block\n90\n", "no 'hex' column"),
    ("llvm_mca_anchor/" + bhive.ANCHOR.name, b'hex\n"9\n', "not a CSV table"),
])
def test_a_hostile_data_folder_is_refused_in_one_line(folder, where, content, words):
    (folder / where).write_bytes(content)
    with pytest.raises(UserError, match=words) as info:
        bhive.select(folder=folder)
    assert "\n" not in str(info.value)


def test_empty_blocks_of_the_sources_stay_so_the_order_is_kept(folder):
    """BHive's sources hold lines with an empty block: kept (the harness refuses it), so the shuffle is unchanged."""
    with gzip.open(folder / "bhive" / "sources" / "a.csv.gz", "wt") as handle:
        handle.write("90,0.1\n,0.5\n4801d8,0.2\n")
    assert "" in bhive.distinct_blocks(folder)
