"""Hostile basic blocks (issue 29): a block is data from anywhere, and any bytes can reach any
instruction, so the harness's sandbox, not the decoder, is what stops them.

Each block here is fed to the harness binary directly, past ``measure.refusal()``, in an empty working
folder, the harness in a session of its own: the block's file is never created, no process of that
session survives the call, and the block is reported in one line as refused, faulted or timed out.
The hex was assembled with llvm-mc-19; the AT&T text is beside each.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.surrogates.difftune import measure as m
from tests.helpers.harness import run_direct

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None or platform.machine() != "x86_64" or platform.system() != "Linux",
    reason="the harness needs cc on Linux x86-64")

STATE_ADDR = 0x200000000000
MARKER = "pwned"  # every block below that could create a file names this one, in the working folder

# movabs $"pwned",%rbx; mov %rbx,(%rdi)   (rdi = the data page)
_PATH = "48bb70776e656400000048891f"
CREAT = _PATH + "bea4010000" + "b855000000" + "0f05"  # mov $0644,%esi; mov $85,%eax; syscall
# mov $0644,%esi; lea 4(%rip),%rcx; jmp *%rcx; movabs $imm,%rdx with `mov $85,%eax; syscall` inside imm
HIDDEN = _PATH + "bea4010000" + "488d0d04000000" + "ffe1" + "48bab8550000000f0590"
# The escape of issue 29: a fake saved stack pointer at the harness's state page (data + 0x100), whose
# return slot (data + 0x130) points into a `mov $85,%eax; syscall` hidden in an immediate; the block ends
# normally and the epilogue's `ret` would run the hidden system call.
ESCAPE = (_PATH + "488d8700010000" + "48a3" + STATE_ADDR.to_bytes(8, "little").hex()  # lea 0x100(%rdi),%rax; movabs %rax,STATE
          + "488d0d09000000" + "48898f30010000"  # lea 9(%rip),%rcx; mov %rcx,0x130(%rdi)
          + "48bab8550000000f0590")  # movabs $imm,%rdx (the gadget)
FORK = "b839000000" + "0f05" + "ebfe"  # mov $57,%eax; syscall; jmp .
ALARM = "b825000000" + "31ff" + "0f05" + "ebfe"  # mov $37,%eax; xor %edi,%edi; syscall (alarm(0)); jmp .
# execve("/usr/bin/touch", ["/touch", "pwned"], NULL), the strings and argv built in the data page
EXEC = ("48bb2f7573722f620000" "48899f00010000" "48bb696e2f746f756368" "48899f06010000" "c6870e01000000"
        "48bb2f746f7563680000" "48899f00020000" "48bb70776e6564000000" "48899f08020000" "488d8700010000"
        "48898700030000" "488d8708020000" "48898708030000" "48c7871003000000000000" "488db700030000" "31d2"
        "4881c700010000" "b83b000000" "0f05")
STATE_WRITE = "48a3" + STATE_ADDR.to_bytes(8, "little").hex()  # movabs %rax,STATE: the harness's own page
SPIN = "ebfe"  # jmp .
# A result forged through the result pipe: 16 pages touched (each maps onto the one shared page, so 65,560
# contiguous bytes read back), status ok and n = 2^31 - 1 written, then write(3, data, 65560); exit_group(0).
FORGE = ("".join(f"488b87{(k << 12).to_bytes(4, 'little').hex()}" for k in range(1, 17))
         + "48c70700000000" + "c74710ffffff7f" + "4889fe" + "bf03000000" + "ba18000100" + "b801000000" + "0f05"
         + "b8e7000000" + "31ff" + "0f05")


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("harness") / "difftune-harness"
    m._compile(target)
    return target


@pytest.mark.parametrize(("block", "number"), [(CREAT, 85), (HIDDEN, 85), (FORK, 57), (EXEC, 59), (ALARM, 37)],
                         ids=["creat", "creat-hidden-in-an-immediate", "fork-then-spin", "execve", "alarm0-then-spin"])
def test_a_system_call_from_a_block_is_refused_by_the_kernel_and_never_runs(binary, tmp_path, block, number):
    record = run_direct(binary, tmp_path, block)
    assert record["status"] == "refused"
    assert record["detail"] == f"system call {number} stopped by the sandbox"
    assert list(tmp_path.iterdir()) == []


def test_the_escape_through_the_state_page_faults_at_the_write(binary, tmp_path):
    record = run_direct(binary, tmp_path, ESCAPE)
    assert record["status"] == "fault" and record["detail"] == "fault: access to a protected page"
    assert record["fault_addr"] == STATE_ADDR  # stopped at its store, not after a hijacked return
    assert list(tmp_path.iterdir()) == []


def test_a_block_writing_the_harness_state_page_faults_there(binary, tmp_path):
    record = run_direct(binary, tmp_path, STATE_WRITE)
    assert (record["status"], record["fault_addr"]) == ("fault", STATE_ADDR)


def test_a_block_that_spins_is_killed_at_its_deadline(binary, tmp_path):
    assert run_direct(binary, tmp_path, SPIN, timeout_ms=100)["status"] == "timeout"


def test_a_forged_result_is_judged_by_the_parent_and_reported_malformed(binary, tmp_path):
    record = run_direct(binary, tmp_path, FORGE)
    assert (record["status"], record["detail"]) == ("fault", "the child sent a malformed result")
    assert "ticks" not in record


def test_ordinary_blocks_still_measure_in_the_sandbox(binary, tmp_path):
    for block in ("4801c0", "488b9800000100", "c4e275b8c2"):  # add; a load from an unmapped page; vfmadd231ps
        record = run_direct(binary, tmp_path, block, unroll=50, repeats=8)
        assert record["status"] == "ok" and len(record["ticks"]) == 8


def test_the_decoder_passes_the_escape_so_the_sandbox_must_stop_it():
    assert m.refusal(ESCAPE) is None and m.refusal(FORGE) is not None  # the escape decodes as plain moves


def test_blocks_measure_on_a_hostile_data_folder_creates_nothing(tmp_path):
    """The path of the report: ``tunelab blocks measure`` reading the escape from a BHive-format data folder."""
    data = tmp_path / "data"
    (data / "bhive" / "sources").mkdir(parents=True)
    (data / "llvm_mca_anchor").mkdir()
    (data / "bhive" / "may-alias.csv.gz").write_bytes(gzip.compress(b""))
    (data / "bhive" / "sources" / "evil.csv.gz").write_bytes(gzip.compress(f"{ESCAPE},1.0\n".encode()))
    (data / "llvm_mca_anchor" / "bhive_sample2000_llvm_mca_cycles100.csv").write_text(
        f"hex,n_instr,haswell_mca19\n{ESCAPE},7,100\n4801c0,1,100\n")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([str(Path(sys.executable).with_name("tunelab")), "--db", str(tmp_path / "t.duckdb"),
                           "blocks", "measure", "--source", "anchor", "--json"],
                          cwd=work, env={**os.environ, "TUNELAB_DATA": str(data)}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["by_status"].get("fault") == 1
    assert list(work.iterdir()) == []


def test_a_harness_that_never_answers_is_killed_with_its_group(tmp_path):
    """The Python side's own deadline: the harness and what it started end together."""
    fake = tmp_path / "fake-harness"
    fake.write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")
    fake.chmod(0o755)
    before = {p.name for p in Path("/proc").iterdir() if p.name.isdigit()}
    with pytest.raises(RuntimeError, match="no answer within"):
        m.run_harness([m.Job("4801c0", 1, 1)], cpu=m.default_cpu(), timeout_s=0.01, binary=fake, grace_s=0.0)
    for _ in range(100):  # SIGKILL lands asynchronously: give the kernel a moment
        sleepers = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and p.name not in before
                    and _cmdline(p) == "sleep 600"]
        if not sleepers:
            break
        time.sleep(0.05)
    assert sleepers == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""
