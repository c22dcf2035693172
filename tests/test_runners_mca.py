"""McaRunner against Debian llvm-19's llvm-mc-19/llvm-mca-19, checked with the anchor data."""

import shutil

import pandas as pd
import pytest

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.runners.mca import McaRunner

pytestmark = pytest.mark.skipif(
    shutil.which("llvm-mca-19") is None or shutil.which("llvm-mc-19") is None,
    reason="llvm-19 is not installed (make system-test-deps)",
)

BLOCK = "8b73284889e74989c4"  # mov 40(%rbx),%esi; mov %rsp,%rdi; mov %rax,%r12


def test_hex_block_cycles_per_iteration_match_the_anchor_data(data):
    anchor = pd.read_csv(data / "llvm_mca_anchor" / "bhive_sample2000_llvm_mca_cycles100.csv", nrows=60)
    rows = anchor[anchor["n_instr"].between(3, 12)].head(3)
    for row in rows.itertuples():
        runner = runner_from_spec({"kind": "mca", "hex": row.hex, "iterations": 100})
        for cpu, column in (("haswell", "haswell_mca19"), ("skylake", "skylake_mca19")):
            result = runner.measure({"mcpu": cpu})[0]
            assert result.ok, result.error
            assert result.value == pytest.approx(getattr(row, column) / 100)


def test_flags_are_factors_and_change_the_prediction():
    runner = McaRunner(hex=BLOCK, repeats=2)
    wide = runner.measure({"mcpu": "haswell"})
    narrow = runner.measure({"mcpu": "haswell", "dispatch": 1, "noalias": False})
    assert [r.value for r in wide] == [0.82, 0.82]  # deterministic: repeats agree
    assert narrow[0].value > wide[0].value
    assert "-dispatch=1" in narrow[0].metadata["mca_args"] and "-noalias=false" in narrow[0].metadata["mca_args"]


def test_assembly_input_and_bad_values():
    runner = McaRunner(asm="addq %rax, %rbx\nimulq %rbx, %rcx\n")
    assert runner.measure({"mcpu": "skylake"})[0].value > 0
    assert runner.measure({"mcpu": "notacpu"})[0].status == "invalid"
    assert runner.measure({"tile": 4})[0].status == "invalid"
    assert runner.measure({"dispatch": -1})[0].status == "invalid"
    assert McaRunner(hex="ffff").measure({"mcpu": "haswell"})[0].status == "invalid"
    with pytest.raises(UserError, match="exactly one"):
        McaRunner()
    with pytest.raises(UserError, match="hex"):
        McaRunner(hex="xyz")
