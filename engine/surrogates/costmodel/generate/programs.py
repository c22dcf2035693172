"""The program families of costmodel.md §4.3 as plain, seeded specs: what to compile and which configurations to
time, with no JAX (the JAX side, :mod:`.jaxbackend`, turns a spec into a function).

* **tile task**: ``lax.map(f, xs, batch_size=b)`` over row-wise functions (softmax·W, row-MLP, layernorm+matmul,
  attention-like, conv-like). The chunk size b behaves like a tile: the optimised HLO becomes a while loop over
  b-row chunks, and the runtime has a real interior optimum once a whole batch's intermediates outgrow the caches.
  Every shape of the grid within the limits below is enumerated and shuffled by the seed, so programs are distinct.
* **joint task**: the tile task's programs with a second tile knob, the split: the row function's second size (the
  MLP's hidden units, the attention's keys, the convolution's channels, the matmul's output columns) is computed in
  ``splits`` blocks (for attention, flash-style with a running maximum). Chunk size × split is a two-dimensional tile
  space with interactions (a chunk's intermediate shrinks with the split, so the best chunk moves), large enough
  that a ranker's savings over random search show. Its files are tile files with a ``splits`` column.
* **large task**: the joint task's programs over a space large enough that the choice matters (issue 34: ≥ 200
  configurations, few of them near the best): chunk sizes 2^k and 3·2^k, splits 1–32 (blocks of at least
  :data:`MIN_BLOCK`, computed by a loop over the blocks, as flash attention does, so that 32 blocks compile as fast
  as 2), and a compiler flag, XLA-CPU's YNN fusions on or off (a different kernel for every dot).
* **absolute task**: random op DAGs with the ops that analytical models mispredict (transposes, reductions over the
  major axis, convolutions, odd-shaped dots, gather/scatter, concat) plus real small blocks (MLP, attention,
  convolution, normalisation), each compiled with and without XLA-CPU's YNN fusions (two kernel partitions of the
  same program, one graph file each).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from engine.errors import UserError

TASKS = ("tile", "joint", "large", "absolute")

# ---- tile task -------------------------------------------------------------------------------------------------

FAMILIES = ("softmax_matmul", "row_mlp", "layernorm_matmul", "attention", "conv")
ROWS = (1024, 2048, 4096, 8192, 16384, 32768)
WIDTHS = (64, 96, 128, 192, 256, 384, 512, 640, 768, 896, 1024, 1280, 1536, 2048, 2560, 3072, 4096)
#: The family's second size: the matmul width, the MLP's hidden width, the attention's key count, the convolution's channels.
SECOND = {"softmax_matmul": (64, 96, 128, 192, 256, 384, 512, 768, 1024),
          "row_mlp": (64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096),
          "layernorm_matmul": (64, 96, 128, 192, 256, 384, 512, 768, 1024),
          "attention": (128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096), "conv": (4, 6, 8, 12, 16, 24, 32, 48, 64)}
CONV_TAPS = 9
#: Rough single-core flop rates of the families at their best chunk and memory bandwidth (project VM, AMD EPYC,
#: YNNPACK dots): only used to keep a program's estimated best call within :data:`SECONDS_WINDOW`.
RATE = {"softmax_matmul": 75e9, "row_mlp": 75e9, "layernorm_matmul": 75e9, "attention": 75e9, "conv": 7e9}
BANDWIDTH = 10e9
#: Estimated best call time of a program: shorter ones are mostly overhead, longer ones cost minutes to time.
SECONDS_WINDOW = (0.008, 0.08)
#: The unchunked program's re-read intermediate must outgrow the caches (1 MiB L2 per core, 32 MiB shared L3 on the
#: project VM), else it simply wins. Measured on 96 programs sized by rows × max(width, second): at 8–12 MiB, 48 % had
#: an interior optimum and the unchunked program was as fast as the best chunk (median); at ≥ 32 MiB all 18 had one,
#: and the unchunked program ran 1.45–2.1× slower. Attention re-reads its (rows × keys) scores and shows it from 8 MiB.
#: With these limits, 69 of the first 80 programs timed had an interior optimum (data/costmodel/README.md).
MIN_INTERMEDIATE = {"softmax_matmul": 24 << 20, "row_mlp": 24 << 20, "layernorm_matmul": 24 << 20, "attention": 8 << 20, "conv": 24 << 20}
MAX_INTERMEDIATE = 128 << 20
#: The input x stays within this many bytes: memory, and the time of one call.
MAX_INPUT = 64 << 20
#: The smallest chunk keeps at most this many chunks: one-row chunks of a large input cost seconds per call and
#: are never near the optimum (§4.3: b = 1 is 3× slower than the best chunk).
MAX_CHUNKS = 512
TILE_COLUMNS = ("batch_size", "chunks", "remainder", "rows", "row_width", "second", "config_flops", "config_bytes")
#: Splits of the joint task, and its columns: ``splits`` right after ``batch_size``, so the two identify a configuration.
SPLITS = (1, 2, 4, 8)
JOINT_COLUMNS = ("batch_size", "splits", *TILE_COLUMNS[1:])
#: Splits of the large task, each block at least :data:`MIN_BLOCK` wide; its columns add the fusion flag.
LARGE_SPLITS = (1, 2, 4, 8, 16, 32)
MIN_BLOCK = 8
#: The large task's programs stay under this estimated best call: 228 configurations, the slow ones several times
#: the best, are timed per program.
LARGE_MAX_SECONDS = 0.06
LARGE_COLUMNS = ("batch_size", "splits", "ynn_fusion", *TILE_COLUMNS[1:])
#: Columns the compiler's cost analysis fills in, per configuration.
COUNTED = ("config_flops", "config_bytes")

# ---- absolute task ---------------------------------------------------------------------------------------------

SIZES = (32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
ODD_WIDTHS = (7, 33, 100, 129, 257, 500)
MAX_ELEMENTS = 1 << 20
MIN_ELEMENTS = 1 << 14
#: Relative frequency of each op in a random DAG (§4.3's mix, plus the elementwise glue between them).
OP_MIX = {"transpose": 2, "reduce_major": 2, "dot": 2, "conv": 1, "gather": 1, "scatter": 1, "concat": 1, "unary": 2,
          "binary": 2, "softmax": 1, "layernorm": 1}
BLOCKS = ("mlp", "attention", "conv", "layernorm")
#: Share of absolute programs that are one real block (plus up to two random ops) instead of a random DAG.
BLOCK_SHARE = 0.4
#: Compile variants of an absolute program: XLA-CPU's defaults, and its YNN fusions turned off.
VARIANTS: dict[str, dict[str, Any]] = {"ynn": {}, "noynn": {"xla_cpu_experimental_ynn_fusion_type": ""}}
ABSOLUTE_COLUMNS = ("ynn_fusion",)


@dataclass(frozen=True)
class Configuration:
    """One compile of a program: its named configuration columns (before the compiler's counts), the compile
    options it adds, and, for the tile tasks, the ``lax.map`` chunk size and the split of the second size."""

    label: str
    features: dict[str, float]
    options: dict[str, Any] = field(default_factory=dict)
    batch: int = 0
    splits: int = 1


@dataclass(frozen=True)
class GraphFile:
    """Which configurations one ``.npz`` holds, and whose optimised HLO is its graph (also its default run)."""

    stem: str
    configs: tuple[int, ...]
    graph: int


@dataclass(frozen=True)
class TileProgram:
    """``lax.map(row_fn, x, batch_size=b)`` on x of shape (rows, width); ``second`` is the family's other size, computed
    in each of ``splits`` blocks (the joint task; the tile task has the one split 1)."""

    family: str
    rows: int
    width: int
    second: int
    splits: tuple[int, ...] = (1,)
    variants: tuple[str, ...] = ("ynn",)

    @property
    def joint(self) -> bool:
        return self.splits != (1,)

    @property
    def large(self) -> bool:
        """Whether the compile variants are a knob too (the large task)."""
        return len(self.variants) > 1

    @property
    def name(self) -> str:
        suffix = "_large" if self.large else "_split" if self.joint else ""
        return f"{self.family}_r{self.rows}_w{self.width}_s{self.second}{suffix}"

    @property
    def task(self) -> str:
        """The files' task: both tile tasks write tile files."""
        return "tile"

    @property
    def columns(self) -> tuple[str, ...]:
        return LARGE_COLUMNS if self.large else JOINT_COLUMNS if self.joint else TILE_COLUMNS

    def flops(self) -> float:
        """Approximate flops of the whole program (chunking changes the loop, not the arithmetic)."""
        factor = {"row_mlp": 4, "attention": 4, "conv": 4 * CONV_TAPS}.get(self.family, 2)
        return float(self.rows * factor * self.width * self.second)

    def intermediate(self) -> int:
        """Bytes of the unchunked program's largest re-read intermediate: the normalised rows before the matmul, the
        MLP's hidden layer, the attention scores, the convolution's channels."""
        per_row = {"softmax_matmul": self.width, "layernorm_matmul": self.width, "row_mlp": self.second, "attention": self.second,
                   "conv": self.width * self.second}[self.family]
        return 4 * self.rows * per_row

    def seconds(self) -> float:
        """Estimated time of the best call: the flops at the family's rate, plus input and intermediate read and written once."""
        return self.flops() / RATE[self.family] + 2 * (self.intermediate() + 4 * self.rows * self.width) / BANDWIDTH

    def timeable(self) -> bool:
        """Whether the program has a cache-driven optimum and times in reasonable time (see the constants)."""
        longest = LARGE_MAX_SECONDS if self.large else SECONDS_WINDOW[1]
        return (SECONDS_WINDOW[0] <= self.seconds() <= longest and MIN_INTERMEDIATE[self.family] <= self.intermediate() <= MAX_INTERMEDIATE
                and 4 * self.rows * self.width <= MAX_INPUT)

    def batch_sizes(self) -> tuple[int, ...]:
        """Powers of two from the smallest allowed chunk up to all rows, plus chunk sizes that leave a remainder
        (``lax.map`` then runs the leftover rows as one more, differently shaped, vmapped call): two in the tile task,
        3·2^k between every two powers in the large task; the joint task keeps powers of two."""
        smallest = max(1, self.rows // MAX_CHUNKS)
        powers = [1 << k for k in range(self.rows.bit_length()) if smallest <= 1 << k <= self.rows]
        if self.large:
            ragged = {3 * p // 2 for p in powers if p > 1 and 3 * p // 2 < self.rows}
        else:
            ragged = set() if self.joint else {3 * self.rows // 8, 3 * self.rows // 64} - set(powers)
        return tuple(sorted(set(powers) | {b for b in ragged if b > smallest}))

    def configurations(self) -> list[Configuration]:
        if self.large:
            return [Configuration(f"b{b}_p{p}_{v}", {**self._features(b), "splits": p, "ynn_fusion": float(not VARIANTS[v])},
                                  dict(VARIANTS[v]), batch=b, splits=p)
                    for b, p, v in product(self.batch_sizes(), self.splits, self.variants)]
        if not self.joint:
            return [Configuration(f"b{b}", self._features(b), batch=b) for b in self.batch_sizes()]
        return [Configuration(f"b{b}_p{p}", {**self._features(b), "splits": p}, batch=b, splits=p) for b in self.batch_sizes() for p in self.splits]

    def _features(self, batch: int) -> dict[str, float]:
        chunks, remainder = divmod(self.rows, batch)
        return {"batch_size": batch, "chunks": chunks + (remainder > 0), "remainder": remainder, "rows": self.rows,
                "row_width": self.width, "second": self.second}

    def files(self) -> list[GraphFile]:
        """One file: every configuration, the graph of the unchunked, unsplit program (b = rows, what
        ``jit(vmap(f))`` gives) under the compiler's defaults."""
        configs = self.configurations()
        default = next(i for i, config in enumerate(configs) if config.batch == self.rows and config.splits == 1 and not config.options)
        return [GraphFile(self.name, tuple(range(len(configs))), default)]


def tile_programs(seed: int, splits: tuple[int, ...] = (1,), variants: tuple[str, ...] = ("ynn",), min_block: int = 1) -> list[TileProgram]:
    """Every :meth:`~TileProgram.timeable` tile program whose second size the ``splits`` divide into blocks of at
    least ``min_block``, in an order shuffled by ``seed`` (take a prefix for N)."""
    programs = [TileProgram(family, rows, width, second, splits, variants)
                for family in FAMILIES for rows, width, second in product(ROWS, WIDTHS, SECOND[family])]
    programs = [p for p in programs if p.timeable() and all(p.second % split == 0 and p.second // split >= min_block for split in splits)]
    random.Random(seed).shuffle(programs)
    return programs


@dataclass(frozen=True)
class DagNode:
    """One value of a random DAG. ``op`` is a parameter kind (``input``, ``weight``, ``index``) or an operation;
    ``size`` is the op's own number (dot width, channels, gather count, variant, index bound)."""

    op: str
    inputs: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    size: int = 0


PARAMETERS = ("input", "weight", "index")


@dataclass(frozen=True)
class DagProgram:
    """A random op DAG (or a small block) on 2-D f32 values; its sinks are the program's outputs."""

    name: str
    nodes: tuple[DagNode, ...]

    @property
    def task(self) -> str:
        return "absolute"

    @property
    def columns(self) -> tuple[str, ...]:
        return ABSOLUTE_COLUMNS

    def outputs(self) -> list[int]:
        """Values nothing consumes: returning them keeps XLA from deleting any op as dead code."""
        used = {i for node in self.nodes for i in node.inputs}
        return [i for i, node in enumerate(self.nodes) if i not in used and node.op not in PARAMETERS]

    def configurations(self) -> list[Configuration]:
        return [Configuration(label, {"ynn_fusion": float(not options)}, dict(options)) for label, options in VARIANTS.items()]

    def files(self) -> list[GraphFile]:
        """A file per compile variant: the variants' optimised graphs differ, and each file has one graph."""
        return [GraphFile(f"{self.name}_{config.label}", (i,), i) for i, config in enumerate(self.configurations())]


def absolute_programs(seed: int, count: int) -> list[DagProgram]:
    """``count`` programs; program i depends only on (seed, i), so a longer run extends a shorter one."""
    return [random_program(random.Random(f"{seed}-{i}"), f"abs_s{seed}_{i:05d}") for i in range(count)]


def random_program(rng: random.Random, name: str) -> DagProgram:
    """A random DAG of 3–10 ops, or (share :data:`BLOCK_SHARE`) one block with up to two ops after it."""
    builder = _Dag(rng)
    x = builder.input()
    if rng.random() < BLOCK_SHARE:
        builder.apply(rng.choice(BLOCKS), x)
        steps = rng.randint(0, 2)
    else:
        steps = rng.randint(3, 10)
    while steps:
        steps -= builder.apply(rng.choices(list(OP_MIX), list(OP_MIX.values()))[0], rng.choice(builder.values()))
    if not any(node.op not in PARAMETERS for node in builder.nodes):
        raise UserError(f"program {name}: the random DAG has no operation")
    return DagProgram(name, tuple(builder.nodes))


class _Dag:
    """Grows a DAG, keeping every value within :data:`MAX_ELEMENTS` so that no program runs for seconds."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.nodes: list[DagNode] = []

    def add(self, node: DagNode) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def values(self) -> list[int]:
        """Float 2-D values an op may read."""
        return [i for i, node in enumerate(self.nodes) if node.op not in ("weight", "index")]

    def input(self) -> int:
        while True:
            m, n = self.rng.choice(SIZES), self.rng.choice(SIZES)
            if MIN_ELEMENTS <= m * n <= MAX_ELEMENTS:
                return self.add(DagNode("input", shape=(m, n)))

    def apply(self, op: str, x: int) -> int:
        """Append ``op`` on value x; 1 when it was added, 0 when its result would be too large."""
        m, n = self.nodes[x].shape
        before = len(self.nodes)
        shape, extra, size = _OPS[op](self, x, m, n)
        scratch = m * m if op == "attention" else 0  # the (m, m) scores
        if max(shape[0] * shape[1], scratch) > MAX_ELEMENTS:
            del self.nodes[before:]  # the op's weights and indices go with it
            return 0
        self.add(DagNode(op, (x, *extra), shape, size))
        return 1


def _same(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    return (m, n), (), 0


def _transpose(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    return (n, m), (), 0


def _dot(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    width = dag.rng.choice(ODD_WIDTHS)
    return (m, width), (dag.add(DagNode("weight", shape=(n, width))),), width


def _conv(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    channels = dag.rng.choice((2, 4, 8))
    return (m, n), (dag.add(DagNode("weight", shape=(channels, 1, 3, 3))),), channels


def _gather(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    count = dag.rng.choice([s for s in SIZES if s <= 4 * m] or [4 * m])
    return (count, n), (dag.add(DagNode("index", shape=(count,), size=m)),), count


def _scatter(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    count = dag.rng.choice([s for s in SIZES if s <= m] or [m])  # rows narrower than every size: all of them
    return (m, n), (dag.add(DagNode("index", shape=(count,), size=m)),), count


def _concat(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    """Along rows with a value of as many columns, else along columns with one of as many rows, else with itself."""
    rows = [i for i in dag.values() if dag.nodes[i].shape[1] == n]
    columns = [i for i in dag.values() if dag.nodes[i].shape[0] == m]
    if dag.rng.random() < 0.5 and rows:
        y = dag.rng.choice(rows)
        return (m + dag.nodes[y].shape[0], n), (y,), 0
    y = dag.rng.choice(columns)
    return (m, n + dag.nodes[y].shape[1]), (y,), 1


def _binary(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    partners = [i for i in dag.values() if dag.nodes[i].shape == (m, n)]
    return (m, n), (dag.rng.choice(partners),), dag.rng.randrange(3)


def _unary(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    return (m, n), (), dag.rng.randrange(4)


def _mlp(dag: _Dag, x: int, m: int, n: int) -> tuple[tuple[int, int], tuple[int, ...], int]:
    hidden = dag.rng.choice((64, 128, 256, 512, 1024))
    first = dag.add(DagNode("weight", shape=(n, hidden)))
    return (m, n), (first, dag.add(DagNode("weight", shape=(hidden, n)))), hidden


_OPS = {"transpose": _transpose, "reduce_major": _same, "dot": _dot, "conv": _conv, "gather": _gather, "scatter": _scatter,
        "concat": _concat, "unary": _unary, "binary": _binary, "softmax": _same, "layernorm": _same, "mlp": _mlp,
        "attention": _same}


def programs_for(task: str, seed: int, count: int) -> list[TileProgram] | list[DagProgram]:
    """The first ``count`` programs of a task; the tile tasks have only so many distinct programs."""
    if task not in TASKS:
        raise UserError(f"task {task!r} is not one of {', '.join(TASKS)}")
    if count < 1:
        raise UserError(f"programs: at least 1, got {count}")
    if task == "absolute":
        return absolute_programs(seed, count)
    if task == "large":
        programs = tile_programs(seed, LARGE_SPLITS, tuple(VARIANTS), MIN_BLOCK)
    else:
        programs = tile_programs(seed, SPLITS if task == "joint" else (1,))
    if count > len(programs):
        raise UserError(f"programs: the {task} task has {len(programs)} distinct programs, {count} asked for")
    return programs[:count]
