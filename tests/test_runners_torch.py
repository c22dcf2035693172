"""TorchRunner on the CPU for real; the CUDA and Triton paths where CUDA exists."""

import pytest

torch = pytest.importorskip("torch")

from engine.errors import UserError
from engine.runners import runner_from_spec
from engine.runners.torch_runner import TorchRunner

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")


def test_cpu_matmul_over_sizes_dtypes_and_layouts():
    runner = runner_from_spec({"kind": "torch", "op": "matmul", "threads": 1, "repeats": 2, "warmup": 1})
    for config in ({"size": 48}, {"size": 32, "layout": "nt", "dtype": "float64"},
                   {"size": 32, "layout": "tt", "dtype": "bfloat16"}, {"size": 24, "layout": "tn", "dtype": "float16"}):
        results = runner.measure(config)
        assert [r.status for r in results] == ["ok", "ok"], results[0].error
        meta = results[0].metadata
        assert meta["device"] == "cpu" and meta["size"] == config["size"] and meta["layout"] == config.get("layout", "nn")
        assert meta["rel_error"] <= 1e-10 if config.get("dtype") == "float64" else meta["rel_error"] < 0.05
        assert all(r.value > 0 for r in results)


def test_cpu_conv2d_in_both_memory_formats():
    runner = TorchRunner("conv2d", size=12, batch=2, channels=4, threads=1)
    for layout in ("contiguous", "channels_last"):
        result = runner.measure({"layout": layout, "kernel_size": 3})[0]
        assert result.ok, result.error
        assert result.metadata["rel_error"] < 1e-4


def test_bad_factors_are_invalid_and_cuda_without_cuda_fails_cleanly():
    runner = TorchRunner("matmul", size=16)
    assert runner.measure({"dtype": "int8"})[0].status == "invalid"
    assert runner.measure({"layout": "channels_last"})[0].status == "invalid"
    assert runner.measure({"size": 0})[0].status == "invalid"
    assert runner.measure({"tile": 4})[0].status == "invalid"
    with pytest.raises(UserError, match="triton_matmul"):
        TorchRunner("triton_matmul", device="cpu")
    with pytest.raises(UserError, match="op"):
        TorchRunner("fft")
    if not torch.cuda.is_available():
        failed = TorchRunner("matmul", device="cuda").measure({})[0]
        assert failed.status == "failed" and "CUDA is not available" in failed.error


@cuda
def test_cuda_matmul_and_conv2d():
    for op, config in (("matmul", {"size": 256, "dtype": "float16", "layout": "nt"}), ("conv2d", {"size": 32})):
        runner = TorchRunner(op, device="cuda", repeats=3, warmup=2, inner=5)
        assert runner.uses_gpu
        results = runner.measure(config)
        assert [r.status for r in results] == ["ok"] * 3, results[0].error
        assert results[0].metadata["device"] != "cpu"


@cuda
def test_triton_matmul_block_sizes_warps_and_stages():
    runner = TorchRunner("triton_matmul", device="cuda", size=256, dtype="float16", repeats=2, warmup=1)
    for config in ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3},
                   {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 8, "num_stages": 2, "layout": "tn"}):
        results = runner.measure(config)
        assert [r.status for r in results] == ["ok", "ok"], results[0].error
        assert results[0].metadata["rel_error"] < 3e-2
    assert runner.measure({"BLOCK_M": 8})[0].status == "invalid"


def test_one_untimed_warm_up_by_default_and_a_spec_may_say_otherwise():
    # the first call compiles (Triton) and sets up libraries: it must not be one of the timed repeats
    assert TorchRunner("matmul").warmup == 1
    assert runner_from_spec({"kind": "torch", "op": "matmul"}).warmup == 1
    assert runner_from_spec({"kind": "torch", "op": "matmul", "warmup": 0}).warmup == 0
    calls = []
    runner = TorchRunner("matmul", size=8, repeats=2)
    runner.repeat_calls(lambda: calls.append(1) or 0.0, 2)
    assert len(calls) == 3
