"""Fuzz the basic-block harness with random bytes, fed to the binary directly (no decoder in front):
whatever the bytes do, the answer is one line, nothing is created in the working folder and nothing of
the harness's session outlives it."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.surrogates.difftune import measure as m
from tests.helpers.harness import run_direct

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None or platform.machine() != "x86_64" or platform.system() != "Linux",
    reason="the harness needs cc on Linux x86-64")

STATUSES = {"ok", "fault", "timeout", "refused"}
# Bytes that make system calls and jumps common, so the sandbox is reached often, not once in a while.
HOSTILE = st.sampled_from([b"\x0f\x05", b"\xcd\x80", b"\x0f\x34", b"\xeb\xfe", b"\xff\xe1", b"\xc3", b"\xb8\x39\x00\x00\x00",
                           b"\x48\xa3" + (0x200000000000).to_bytes(8, "little"), b"\x48\x8d\x0d\x00\x00\x00\x00"])
BLOCK = st.lists(st.binary(min_size=1, max_size=12) | HOSTILE, min_size=1, max_size=6).map(b"".join)


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("harness") / "difftune-harness"
    m._compile(target)
    return target


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("work")


@given(block=BLOCK, unroll=st.integers(0, 3))
def test_random_bytes_are_measured_or_stopped_in_one_line(binary, folder, block, unroll):
    record = run_direct(binary, folder, block.hex(), unroll=unroll, repeats=1, timeout_ms=20)
    assert record["status"] in STATUSES, record
    assert list(folder.iterdir()) == []
