"""The basic-block harness's mechanics (never its timings): page faults mapped and restarted or
reported, refused blocks never run, timeouts, the calibration and two-unroll arithmetic, the CPU
identity and its nearest llvm-mca -mcpu."""

import platform
import shutil
from pathlib import Path

import pytest

from engine.errors import UserError
from engine.surrogates.difftune import measure as m

needs_harness = pytest.mark.skipif(
    shutil.which("cc") is None or platform.machine() != "x86_64" or platform.system() != "Linux",
    reason="the harness needs cc on Linux x86-64")

INTEL_SPR_AS_167 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 1
microcode\t: 0x1
flags\t\t: fpu sse avx avx2 fma bmi2 avx512f avx512bw avx512vl amx_bf16 avx512_fp16 amx_tile amx_int8

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
"""

AMD_MILAN = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7763 64-Core Processor
stepping\t: 1
microcode\t: 0xa0011d1
flags\t\t: fpu sse avx avx2 fma bmi2
"""


def identity(vendor: str, family: int, model: int, stepping: int = 1, flags: str = "") -> m.CpuIdentity:
    return m.CpuIdentity(vendor, family, model, stepping, "0x1", "", frozenset(flags.split()))


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    """The harness compiled once for this module, into a fresh cache."""
    if shutil.which("cc") is None or platform.machine() != "x86_64":
        pytest.skip("the harness needs cc on Linux x86-64")
    target = tmp_path_factory.mktemp("harness") / "difftune-harness"
    m._compile(target)
    return target


def run_one(binary: Path, block: str, unroll: int = 10, repeats: int = 16, timeout_s: float = 1.0) -> dict:
    return m.run_harness([m.Job(block, unroll, repeats)], cpu=m.default_cpu(), timeout_s=timeout_s, binary=binary)[0]


# ---- faults, refusals, timeouts -------------------------------------------------------------------


@needs_harness
def test_a_load_from_an_unmapped_page_is_mapped_once_then_measured(binary):
    record = run_one(binary, "488b9800000100")  # mov 0x10000(%rax),%rbx: 0x2334000 is unmapped
    assert record["status"] == "ok" and record["maps"] == 1
    assert len(record["ticks"]) == 16 and all(t > 0 for t in record["ticks"])


@needs_harness
def test_a_store_to_an_unmapped_page_is_mapped_and_the_block_restarted(binary):
    record = run_one(binary, "48899800f0ffff48899800100000")  # two stores, two pages below/above
    assert record["status"] == "ok" and record["maps"] == 2


@needs_harness
def test_faults_that_mapping_cannot_cure_are_reported(binary):
    non_canonical = "48a10000000000000080"  # movabs 0x8000000000000000,%rax
    assert "general protection" in run_one(binary, non_canonical)["detail"]
    own_code = "48890500000000"  # mov %rax,0(%rip): a store into the read-only code
    assert "protected page" in run_one(binary, own_code)["detail"]
    frame = m.measure([non_canonical, own_code], binary=binary)
    assert list(frame["status"]) == ["fault", "fault"]


@needs_harness
def test_a_batch_whose_clock_drifted_keeps_its_faults_and_marks_the_rest_noisy(binary, monkeypatch):
    ratios = iter([1.0, 1.5, 1.0, 1.5])  # the clock moved 50% across each attempt (the runs are real)
    monkeypatch.setattr(m, "_calibrate", lambda *args: next(ratios))
    frame = m.measure(["4801c0", "48f7f1"], m.Settings(retries=1), binary=binary)
    assert list(frame["status"]) == ["noisy", "fault"]
    assert "calibration moved" in frame["reason"][0]


@needs_harness
def test_a_dividing_fault_and_an_illegal_instruction_are_faults(binary):
    assert run_one(binary, "48f7f1")["status"] == "fault"  # div %rcx with rdx = rcx: quotient overflow
    assert run_one(binary, "0f0b")["status"] == "fault"  # ud2 (the harness itself refuses nothing)


@pytest.mark.parametrize(("block", "words"), [
    ("0f05", "control flow"),       # syscall
    ("ebfe", "control flow"),       # jmp .
    ("4801c0e800000000", "control flow"),  # add, then call
    ("0fa2", "cpuid"),
    ("ec", "privileged"),           # in (%dx),%al
    ("f4", "privileged"),           # hlt
    ("0f01f9", "rdtscp"),
    ("f3480faed0", "wrfsbase"),
    ("0fff", "undecodable"),
    ("zz", "not hexadecimal"),
])
def test_refusals_name_a_reason(block, words):
    reason = m.refusal(block)
    assert reason is not None and words in reason and "\n" not in reason


def test_ordinary_blocks_are_not_refused():
    assert m.refusal("4801c0480fafc0488b00c5fdfe0048899800100000") is None


def test_refused_blocks_are_never_run(tmp_path):
    missing = tmp_path / "no-such-harness"  # running anything would fail
    frame = m.measure(["0f05", "ebfe", "0FA2"], binary=missing)
    assert list(frame["status"]) == ["refused"] * 3
    assert frame.loc[2, "reason"].startswith("cpuid")


@needs_harness
def test_an_infinite_loop_hits_the_timeout(binary):
    assert run_one(binary, "ebfe", unroll=1, timeout_s=0.2)["status"] == "timeout"


@needs_harness
def test_a_very_long_block_hits_the_timeout(binary):
    record = run_one(binary, "480fafc0", unroll=100_000, repeats=4096, timeout_s=0.05)  # ~0.4 s of imul
    assert record["status"] == "timeout"


@needs_harness
def test_measure_reports_status_per_block_in_input_order(binary):
    # Any clock drift is accepted: on a loaded machine the batch would be marked noisy, which is not the point here.
    frame = m.measure(["4801c0", "0f05", "48f7f1", "4801c0"], m.Settings(max_drift=0.99), binary=binary)
    assert list(frame["status"])[1:3] == ["refused", "fault"]
    assert frame.loc[0, "status"] in ("ok", "noisy") and frame.loc[0, "hex"] == frame.loc[3, "hex"]
    assert set(frame.attrs) >= {"cpu", "mcpu", "unrolls"}


def test_bad_settings_are_one_line_user_errors():
    with pytest.raises(UserError, match="unrolls"):
        m.measure(["4801c0"], m.Settings(unrolls=(100, 200)))
    with pytest.raises(UserError, match="repeats"):
        m.measure(["4801c0"], m.Settings(repeats=4))
    with pytest.raises(UserError, match="block"):
        m.measure([0x4801C0])  # type: ignore[list-item]


# ---- arithmetic -----------------------------------------------------------------------------------


def test_ticks_per_cycle_is_the_chain_difference_over_n():
    assert m.ticks_per_cycle(1474, 750, 1000) == pytest.approx(0.724)
    with pytest.raises(ValueError):
        m.ticks_per_cycle(750, 750, 1000)


def test_cycles_per_100_cancels_the_fixed_overhead():
    ratio, overhead, per_iteration = 0.5, 40.0, 3.0  # ticks/cycle, ticks, cycles
    ticks = {u: overhead + u * per_iteration * ratio for u in (200, 100)}
    assert m.cycles_per_100(ticks[200], ticks[100], 200, 100, ratio) == pytest.approx(300.0)


def test_drift_is_relative():
    assert m.drift(0.72, 0.7272) == pytest.approx(0.01)


def test_clean_ticks_drop_the_first_repeat_and_disturbed_ones():
    record = {"status": "ok", "ticks": [9, 5, 6, 7, 8], "csw": [0, 0, 1, 0, 0], "flt": [0, 0, 0, 2, 0]}
    assert m.clean_ticks(record) == [5, 8]
    assert m.clean_ticks({"status": "timeout"}) == []


# ---- CPU identity ---------------------------------------------------------------------------------


def test_cpu_identity_parses_the_first_processor():
    ident = m.cpu_identity(INTEL_SPR_AS_167)
    assert (ident.vendor, ident.family, ident.model, ident.stepping) == ("GenuineIntel", 6, 167, 1)
    assert ident.microcode == "0x1" and ident.model_name == "Intel(R) Xeon(R) Processor"
    assert "amx_tile" in ident.flags and ident.short_id == "intel-6-167-1"
    assert ident.label == "intel-6-167-1 (Intel(R) Xeon(R) Processor)"
    assert m.cpu_identity(AMD_MILAN).short_id == "amd-25-1-1"


def test_cpu_identity_rejects_a_garbled_number():
    with pytest.raises(UserError, match="model"):
        m.cpu_identity("vendor_id : GenuineIntel\nmodel : seven\n")


def test_this_machine_has_an_identity():
    assert m.cpu_identity().vendor


@pytest.mark.parametrize(("ident", "mcpu"), [
    (identity("AuthenticAMD", 25, 1), "znver3"),
    (identity("AuthenticAMD", 25, 0x21), "znver3"),
    (identity("AuthenticAMD", 25, 0x11), "znver4"),
    (identity("AuthenticAMD", 26, 2), "znver5"),
    (identity("AuthenticAMD", 23, 0x31), "znver2"),
    (identity("GenuineIntel", 6, 0x3C), "haswell"),
    (identity("GenuineIntel", 6, 0x9E), "skylake"),
    (identity("GenuineIntel", 6, 0x55, 4), "skylake-avx512"),
    (identity("GenuineIntel", 6, 0x55, 7), "cascadelake"),
    (identity("GenuineIntel", 6, 0x6A), "icelake-server"),
    (identity("GenuineIntel", 6, 0x8F, flags="amx_tile"), "sapphirerapids"),
    (identity("GenuineIntel", 6, 167), "rocketlake"),
    (identity("GenuineIntel", 6, 167, flags="avx512f amx_tile avx512_fp16"), "sapphirerapids"),
    (identity("GenuineIntel", 6, 167, flags="amx_tile amx_fp16"), "graniterapids"),
    (identity("GenuineIntel", 6, 0xFE, flags="avx512f avx512bw avx512vl"), "skylake-avx512"),
    (identity("CentaurHauls", 7, 1, flags="avx avx2 fma bmi2"), "haswell"),
])
def test_nearest_mcpu(ident, mcpu):
    assert m.nearest_mcpu(ident) == mcpu


def test_nearest_mcpu_maps_the_sample_host():
    assert m.nearest_mcpu(m.cpu_identity(INTEL_SPR_AS_167)) == "sapphirerapids"
    assert m.nearest_mcpu(m.cpu_identity(AMD_MILAN)) == "znver3"


def test_short_blocks_are_unrolled_until_the_body_is_long_enough():
    settings = m.Settings()
    assert m.unrolls_for("4801c0", settings) == (1600, 800)  # one instruction: 4 times the default
    assert m.unrolls_for("4801c04801c3", settings) == (800, 400)
    assert m.unrolls_for("4801c0" * 4, settings) == (400, 200)
    assert m.unrolls_for("4801c0" * 9, settings) == (400, 200)  # never fewer than the default
