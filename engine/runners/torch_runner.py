"""TorchRunner: time a PyTorch operation (matmul, conv2d) on the CPU or CUDA, or a Triton matmul.

Factors a study may vary (missing ones take the runner's defaults): ``size``, ``dtype``
(float32/float64/float16/bfloat16), ``layout`` (matmul: ``nn``/``nt``/``tn``/``tt``, whether A and
B are stored transposed; conv2d: ``contiguous``/``channels_last``), ``threads`` (CPU intra-op
threads), ``batch``/``channels``/``kernel_size`` (conv2d), and for ``triton_matmul`` ``BLOCK_M``,
``BLOCK_N``, ``BLOCK_K``, ``GROUP_M``, ``num_warps``, ``num_stages``.

Each repeat times ``inner`` calls (monotonic clock on the CPU, CUDA events on a GPU) and reports
seconds per call. The check compares one output with the same inputs multiplied in float64.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, check_int, check_options
from engine.runners.python_runner import alarm

if TYPE_CHECKING:
    from torch import Tensor

OPS = ("matmul", "conv2d", "triton_matmul")
DTYPES = ("float32", "float64", "float16", "bfloat16")
LAYOUTS = {"matmul": ("nn", "nt", "tn", "tt"), "triton_matmul": ("nn", "nt", "tn", "tt"),
           "conv2d": ("contiguous", "channels_last")}
#: Largest norm-wise relative error accepted per dtype (float32 allows TF32 convolutions on GPUs).
TOLERANCE = {"float64": 1e-10, "float32": 1e-2, "float16": 3e-2, "bfloat16": 6e-2}
INTEGER_FACTORS = ("size", "threads", "batch", "channels", "kernel_size",
                   "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
DEFAULTS = {"size": 256, "dtype": "float32", "layout": None, "threads": None, "batch": 8, "channels": 16,
            "kernel_size": 3, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}


def _settings(op: str, defaults: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    unknown = [k for k in config if k not in DEFAULTS]
    if unknown:
        raise MeasureError("invalid", f"factor '{unknown[0]}' is not a torch runner factor (known: {', '.join(DEFAULTS)})")
    values = {**defaults, **config}
    for name in INTEGER_FACTORS:
        if values[name] is not None:
            try:
                number = float(values[name])
            except (TypeError, ValueError):
                raise MeasureError("invalid", f"factor '{name}': {values[name]!r} is not an integer") from None
            if not number.is_integer() or number < 1:
                raise MeasureError("invalid", f"factor '{name}': {values[name]!r} must be a positive integer")
            values[name] = int(number)
    if values["dtype"] not in DTYPES:
        raise MeasureError("invalid", f"dtype {values['dtype']!r} is not one of {', '.join(DTYPES)}")
    values["layout"] = values["layout"] or LAYOUTS[op][0]
    if values["layout"] not in LAYOUTS[op]:
        raise MeasureError("invalid", f"layout {values['layout']!r} is not one of {', '.join(LAYOUTS[op])} for {op}")
    if op == "triton_matmul":
        for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
            if values[name] < 16 or values[name] & (values[name] - 1):
                raise MeasureError("invalid", f"{name}={values[name]}: Triton blocks must be powers of two >= 16")
    return values


class TorchRunner(Runner):
    kind = "torch"
    #: The first call JIT-compiles a Triton kernel and sets up cuBLAS and the CUDA context: timed, it
    #: made an H100's first repeat 20-160x slower than the next ones and swamped the mean.
    default_warmup = 1
    OPTIONS = ("op", "device", "inner", "seed", *DEFAULTS)

    def __init__(self, op: str = "matmul", *, device: str = "cpu", inner: int = 1, seed: int = 0, **options: Any) -> None:
        common = {k: options.pop(k) for k in ("repeats", "warmup", "timeout", "check") if k in options}
        super().__init__(**common)
        if op not in OPS:
            raise UserError(f"runner 'torch': op {op!r} must be one of {', '.join(OPS)}")
        if not isinstance(device, str) or not (device == "cpu" or device.startswith("cuda")):
            raise UserError(f"runner 'torch': device {device!r} must be 'cpu' or 'cuda[:N]'")
        if op == "triton_matmul" and not device.startswith("cuda"):
            raise UserError("runner 'torch': op 'triton_matmul' needs device 'cuda'")
        self.op, self.device, self.seed = op, device, int(seed)
        self.inner = check_int({"inner": inner}, "inner", 1, 1, self.kind)
        self.defaults = {**DEFAULTS, **options}
        self.uses_gpu = device.startswith("cuda")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> TorchRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        options = {k: spec[k] for k in cls.OPTIONS if k in spec}
        return cls(**options, **cls.common(spec))

    def _inputs(self, torch: ModuleType, values: Mapping[str, Any]) -> tuple[Tensor, Tensor]:
        dtype = getattr(torch, values["dtype"])
        generator = torch.Generator().manual_seed(self.seed)
        n, layout = values["size"], values["layout"]

        def make(*shape: int) -> Tensor:
            tensor: Tensor = torch.rand(*shape, generator=generator, dtype=torch.float64).to(self.device, dtype)
            return tensor

        if self.op == "conv2d":
            k = values["kernel_size"]
            x, w = make(values["batch"], values["channels"], n, n), make(values["channels"], values["channels"], k, k)
            if layout == "channels_last":
                x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
            return x, w
        a = make(n, n).t() if layout[0] == "t" else make(n, n)
        b = make(n, n).t() if layout[1] == "t" else make(n, n)
        return a, b

    def _operation(self, torch: ModuleType, values: Mapping[str, Any]) -> Callable[..., Tensor]:
        if self.op == "conv2d":
            pad = values["kernel_size"] // 2
            return lambda x, w: torch.nn.functional.conv2d(x, w, padding=pad)
        if self.op == "triton_matmul":
            try:
                from engine.runners.triton_matmul import matmul
            except ImportError as exc:
                raise MeasureError("failed", f"Triton matmul needs the triton package ({exc})") from None
            blocks = {k: values[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")}
            return lambda a, b: matmul(a, b, **blocks)
        return cast("Callable[..., Tensor]", torch.matmul)

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        values = _settings(self.op, self.defaults, config)
        try:
            import torch
        except ImportError:
            raise MeasureError("failed", "PyTorch is not installed") from None
        if self.uses_gpu and not torch.cuda.is_available():
            raise MeasureError("failed", f"device {self.device}: CUDA is not available")
        previous_threads = torch.get_num_threads()
        if values["threads"] and not self.uses_gpu:
            torch.set_num_threads(values["threads"])
        try:
            return self._timed(torch, values, repeats)
        finally:
            torch.set_num_threads(previous_threads)

    def _timed(self, torch: ModuleType, values: Mapping[str, Any], repeats: int) -> Trial:
        inputs = self._inputs(torch, values)
        operation = self._operation(torch, values)
        device_name = torch.cuda.get_device_name(torch.device(self.device)) if self.uses_gpu else "cpu"

        def once() -> float:
            with alarm(self.timeout), torch.inference_mode():
                if self.uses_gpu:
                    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda.synchronize(self.device)
                    begin.record()
                    for _ in range(self.inner):
                        operation(*inputs)
                    end.record()
                    end.synchronize()
                    elapsed_ms: float = begin.elapsed_time(end)
                    return elapsed_ms / 1000.0 / self.inner
                began = time.perf_counter()
                for _ in range(self.inner):
                    operation(*inputs)
                return (time.perf_counter() - began) / self.inner

        metadata = {"op": self.op, "device": device_name, "torch": torch.__version__, "threads": torch.get_num_threads(),
                    **{k: values[k] for k in ("size", "dtype", "layout")}}
        trial = self.repeat_calls(once, repeats, metadata)
        if self.check and trial.failure is None:
            error = self._error(torch, operation, inputs)
            trial.metadata["rel_error"] = error
            if not error <= TOLERANCE[values["dtype"]]:
                trial.values, trial.failure = [], MeasureError(
                    "failed", f"wrong result: relative error {error:.3g} against float64 (tolerance {TOLERANCE[values['dtype']]:g})")
        return trial

    def _error(self, torch: ModuleType, operation: Callable[..., Tensor], inputs: tuple[Tensor, Tensor]) -> float:
        """Norm-wise relative error of one output against the same inputs computed in float64 on the CPU."""
        with torch.inference_mode():
            out = operation(*inputs).to("cpu", torch.float64)
            if self.op == "triton_matmul":
                reference = torch.matmul(*(t.to("cpu", torch.float64) for t in inputs))
            else:
                reference = operation(*(t.to("cpu", torch.float64) for t in inputs))
        scale = float(reference.abs().max())
        return float((out - reference).abs().max()) / (scale if scale > 0 else 1.0)
