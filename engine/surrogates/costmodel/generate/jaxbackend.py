"""The JAX side of the generator: a program spec → one compiled executable per configuration, on one pinned core
with single-threaded XLA (costmodel.md §4.1, §4.4).

JAX is an optional extra (``costmodel-data``); it is imported only when a :class:`JaxBackend` is made, and only
after the process is pinned, so that the threads XLA starts inherit the one core.
"""

from __future__ import annotations

import json
import math
import os
import platform
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import UserError
from engine.surrogates.costmodel.generate.programs import CONV_TAPS, Configuration, DagProgram, TileProgram

#: Options every compile gets: XLA's Eigen thread pool off, so a pinned core times one thread (§4.4).
BASE_OPTIONS: dict[str, Any] = {"xla_cpu_multi_thread_eigen": False}
INSTALL_HINT = "pip install -e .[costmodel-data]"


@dataclass(frozen=True)
class Compiled:
    """One configuration compiled: its optimised HLO text, the compiler's static counts and a blocking call."""

    hlo: str
    flops: float
    bytes: float
    call: Callable[[], object]


def require_jax() -> Any:
    """The ``jax`` module, or a one-line error saying how to install it."""
    try:
        import jax
    except ImportError:
        raise UserError(f"generating cost-model data needs JAX 0.10.2, which is missing: {INSTALL_HINT}") from None
    return jax


def pin(cpu: int | None) -> int:
    """Pin every thread of this process to one CPU (default: the highest this process may use) and return it."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None else cpu
    if chosen not in allowed:
        raise UserError(f"--cpu {chosen}: this process may run on CPUs {', '.join(map(str, allowed))} only")
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), {chosen})
        except (ProcessLookupError, ValueError):
            continue  # a thread that ended meanwhile
    return chosen


def cpu_model() -> str:
    """The CPU's marketing name (``model name`` of /proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class JaxBackend:
    """Compiles specs with JAX's CPU backend on the pinned core."""

    def __init__(self, cpu: int | None = None) -> None:
        self.cpu = pin(cpu)
        self.jax = require_jax()

    def environment(self) -> dict[str, str]:
        """What each sample records about how it was made."""
        import jaxlib

        return {"jax_version": self.jax.__version__, "jaxlib_version": jaxlib.__version__, "cpu_model": cpu_model(),
                "cpu": str(self.cpu), "xla_flags_env": os.environ.get("XLA_FLAGS", ""), "base_options": json.dumps(BASE_OPTIONS)}

    def empty(self) -> Callable[[], object]:
        """A call that does (almost) nothing: its time is the dispatch overhead every sample carries."""
        jax = self.jax
        compiled = jax.jit(lambda a: a + 1).lower(np.float32(0)).compile(compiler_options=BASE_OPTIONS)
        scalar = jax.numpy.float32(0)
        return lambda: jax.block_until_ready(compiled(scalar))

    def compile(self, program: TileProgram | DagProgram) -> list[Compiled]:
        """Every configuration of ``program``, compiled on the same inputs (one copy of them on the device: a large
        task's 228 configurations of a 64 MiB input would otherwise hold 14 GiB)."""
        rng = np.random.default_rng(zlib.crc32(program.name.encode()))
        if isinstance(program, TileProgram):
            args = self._put(tile_inputs(program, rng))
            return [self._compile(tile_function(self.jax, program, config.batch, config.splits), args, config)
                    for config in program.configurations()]
        args = self._put(dag_inputs(program, rng))
        return [self._compile(dag_function(self.jax, program), args, config) for config in program.configurations()]

    def _put(self, arrays: list[np.ndarray]) -> list[Any]:
        return [self.jax.device_put(a) for a in arrays]

    def _compile(self, function: Callable[..., Any], args: list[Any], config: Configuration) -> Compiled:
        jax = self.jax
        compiled = jax.jit(function).lower(*args).compile(compiler_options={**BASE_OPTIONS, **config.options})
        counts = compiled.cost_analysis()
        counts = counts[0] if isinstance(counts, list) else counts
        # XLA leaves zero properties out (a program of tanh and copies has "transcendentals" but no "flops"); an
        # analysis that gave nothing at all is unknown.
        missing = 0.0 if counts else math.nan
        return Compiled(compiled.as_text(), float(counts.get("flops", missing)), float(counts.get("bytes accessed", missing)),
                        lambda: jax.block_until_ready(compiled(*args)))


def tile_inputs(program: TileProgram, rng: np.random.Generator) -> list[np.ndarray]:
    """x (rows, width), then the family's parameters, scaled by 1/√fan-in so that values stay finite."""
    w, s = program.width, program.second
    shapes: dict[str, list[tuple[int, ...]]] = {"softmax_matmul": [(w, s)], "row_mlp": [(w, s), (s, w)], "layernorm_matmul": [(w,), (w,), (w, s)],
                                               "attention": [(s, w), (s, w)], "conv": [(s, 1, CONV_TAPS), (1, s, CONV_TAPS)]}
    return [_normal(rng, (program.rows, w))] + [_normal(rng, shape) for shape in shapes[program.family]]


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    fan_in = shape[0] if len(shape) > 1 else 1
    return (rng.standard_normal(shape) / math.sqrt(fan_in)).astype(np.float32)


def tile_function(jax: Any, program: TileProgram, batch: int, splits: int = 1) -> Callable[..., Any]:
    """``lax.map`` of the family's row function over x in chunks of ``batch`` rows, its second size computed in
    ``splits`` blocks (one block: the plain expression, so the tile task's programs are unchanged): unrolled in the
    joint task, a loop over the blocks in the large task."""
    if program.large and splits > 1:
        return _looped(jax, program, batch, splits)
    jnp, lax, nn = jax.numpy, jax.lax, jax.nn
    step = program.second // splits
    blocks = [slice(j * step, (j + 1) * step) for j in range(splits)]

    def columns(a: Any, w: Any) -> Any:
        """a @ w, by blocks of w's columns."""
        return a @ w if splits == 1 else jnp.concatenate([a @ w[:, block] for block in blocks], axis=-1)

    def softmax_matmul(r: Any, w: Any) -> Any:
        return columns(nn.softmax(r), w)

    def row_mlp(r: Any, w1: Any, w2: Any) -> Any:
        if splits == 1:
            return nn.relu(r @ w1) @ w2
        return sum(nn.relu(r @ w1[:, block]) @ w2[block] for block in blocks)

    def layernorm_matmul(r: Any, g: Any, b: Any, w: Any) -> Any:
        return columns(_layernorm(lax, r, g, b), w)

    def attention(r: Any, k: Any, v: Any) -> Any:
        if splits == 1:
            return nn.softmax(k @ r / math.sqrt(program.width)) @ v
        # Flash-style: each key block's scores against its own maximum, rescaled to the overall one at the end.
        scores = [k[block] @ r / math.sqrt(program.width) for block in blocks]
        peaks = [s.max() for s in scores]
        weights = [jnp.exp(s - peak) for s, peak in zip(scores, peaks)]
        top = jnp.max(jnp.stack(peaks))
        scale = [jnp.exp(peak - top) for peak in peaks]
        total = sum(c * w.sum() for c, w in zip(scale, weights))
        return sum(c * (w @ v[block]) for c, w, block in zip(scale, weights, blocks)) / total

    def conv(r: Any, f1: Any, f2: Any) -> Any:
        return _conv(lax, nn, r, f1, f2) if splits == 1 else sum(_conv(lax, nn, r, f1[block], f2[:, block]) for block in blocks)

    rows: dict[str, Callable[..., Any]] = {"softmax_matmul": softmax_matmul, "row_mlp": row_mlp, "layernorm_matmul": layernorm_matmul,
                                           "attention": attention, "conv": conv}
    row = rows[program.family]

    def mapped(x: Any, *params: Any) -> Any:
        return lax.map(lambda r: row(r, *params), x, batch_size=batch)

    return mapped


def _layernorm(lax: Any, r: Any, g: Any, b: Any) -> Any:
    return (r - r.mean()) * lax.rsqrt(r.var() + 1e-5) * g + b


def _conv(lax: Any, nn: Any, r: Any, g1: Any, g2: Any) -> Any:
    """Two 1-D convolutions of a row through the channels of g1 (c, 1, taps) and g2 (1, c, taps)."""
    hidden = nn.relu(lax.conv_general_dilated(r[None, None, :], g1, (1,), "SAME"))
    return lax.conv_general_dilated(hidden, g2, (1,), "SAME")[0, 0]


def _looped(jax: Any, program: TileProgram, batch: int, splits: int) -> Callable[..., Any]:
    """The large task's split: a ``lax.scan`` over the blocks of the second size inside each row (flash attention's
    online softmax for attention), the parameters cut into blocks once per call, outside the chunk loop."""
    jnp, lax, nn = jax.numpy, jax.lax, jax.nn
    step = program.second // splits

    def by_columns(w: Any) -> Any:
        """(k, second) → (splits, k, step)."""
        return w.reshape(w.shape[0], splits, step).transpose(1, 0, 2)

    def by_rows(w: Any) -> Any:
        """(second, ...) → (splits, step, ...)."""
        return w.reshape(splits, step, *w.shape[1:])

    def columns(a: Any, blocks: Any) -> Any:
        return lax.map(lambda w: a @ w, blocks).reshape(-1)

    def summed(term: Callable[..., Any], zero: Any, blocks: tuple[Any, ...]) -> Any:
        return lax.scan(lambda total, block: (total + term(*block), None), zero, blocks)[0]

    def attention(r: Any, k: Any, v: Any) -> Any:
        def block(carry: tuple[Any, Any, Any], kv: tuple[Any, Any]) -> tuple[tuple[Any, Any, Any], None]:
            peak, total, out = carry
            scores = kv[0] @ r / math.sqrt(program.width)
            new_peak = jnp.maximum(peak, scores.max())
            weights, scale = jnp.exp(scores - new_peak), jnp.exp(peak - new_peak)
            return (new_peak, total * scale + weights.sum(), out * scale + weights @ kv[1]), None

        start = (jnp.float32(-jnp.inf), jnp.float32(0), jnp.zeros(program.width, jnp.float32))
        _, total, out = lax.scan(block, start, (k, v))[0]
        return out / total

    rows: dict[str, tuple[Callable[..., Any], Callable[..., tuple[Any, ...]]]] = {
        "softmax_matmul": (lambda r, w: columns(nn.softmax(r), w), lambda w: (by_columns(w),)),
        "layernorm_matmul": (lambda r, g, b, w: columns(_layernorm(lax, r, g, b), w), lambda g, b, w: (g, b, by_columns(w))),
        "row_mlp": (lambda r, w1, w2: summed(lambda a, b: nn.relu(r @ a) @ b, jnp.zeros_like(r), (w1, w2)),
                    lambda w1, w2: (by_columns(w1), by_rows(w2))),
        "attention": (attention, lambda k, v: (by_rows(k), by_rows(v))),
        "conv": (lambda r, f1, f2: summed(lambda a, b: _conv(lax, nn, r, a, b), jnp.zeros_like(r), (f1, f2)),
                 lambda f1, f2: (by_rows(f1), f2.reshape(1, splits, step, -1).transpose(1, 0, 2, 3))),
    }
    row, cut = rows[program.family]

    def mapped(x: Any, *params: Any) -> Any:
        blocks = cut(*params)
        return lax.map(lambda r: row(r, *blocks), x, batch_size=batch)

    return mapped


def dag_inputs(program: DagProgram, rng: np.random.Generator) -> list[np.ndarray]:
    """One array per parameter node: values, weights (1/√fan-in) and in-range int32 indices."""
    arrays = []
    for node in program.nodes:
        if node.op == "index":
            arrays.append(rng.integers(0, node.size, node.shape).astype(np.int32))
        elif node.op in ("input", "weight"):
            arrays.append(_normal(rng, node.shape))
    return arrays


def dag_function(jax: Any, program: DagProgram) -> Callable[..., Any]:
    """The DAG as a function of its parameter nodes (in node order) returning every sink."""
    jnp, lax, nn = jax.numpy, jax.lax, jax.nn
    unary = (jnp.exp, jnp.tanh, lambda a: jnp.sqrt(jnp.abs(a)), lambda a: jnp.log1p(jnp.abs(a)))
    binary = (jnp.add, jnp.multiply, jnp.maximum)

    def layernorm(v: Any) -> Any:
        return (v - v.mean(-1, keepdims=True)) * lax.rsqrt(v.var(-1, keepdims=True) + 1e-5)

    ops: dict[str, Callable[..., Any]] = {
        "transpose": lambda node, v: v.T,
        "reduce_major": lambda node, v: v * v.sum(0, keepdims=True),
        "dot": lambda node, v, w: v @ w,
        "conv": lambda node, v, w: lax.conv_general_dilated(v[None, None], w, (1, 1), "SAME")[0].sum(0),
        "gather": lambda node, v, i: v[i],
        "scatter": lambda node, v, i: v.at[i].add(v[: i.shape[0]]),
        "concat": lambda node, v, y: jnp.concatenate([v, y], axis=node.size),
        "unary": lambda node, v: unary[node.size](v),
        "binary": lambda node, v, y: binary[node.size](v, y),
        "softmax": lambda node, v: nn.softmax(v, axis=-1),
        "layernorm": lambda node, v: layernorm(v),
        "mlp": lambda node, v, w1, w2: nn.relu(v @ w1) @ w2,
        "attention": lambda node, v: nn.softmax(v @ v.T / math.sqrt(v.shape[1]), axis=-1) @ v,
    }

    def function(*params: Any) -> Any:
        supplied = iter(params)
        values: list[Any] = []
        for node in program.nodes:
            if node.op in ("input", "weight", "index"):
                values.append(next(supplied))
            else:
                values.append(ops[node.op](node, *(values[i] for i in node.inputs)))
        return tuple(values[i] for i in program.outputs())

    return function
