"""DiffTune's parameter learning (difftune.md §1 steps 3-4, §5): the surrogate frozen, the table trained.

θ is a float matrix with one row per opcode key of the blocks (an embedding: a batch gathers the rows of
its instructions) in the surrogate's feature columns, plus the two globals (dispatch width, ROB size).
Each step feeds ``abs(θ)`` through the frozen network (which divides by 100 itself), takes the MAPE against
the truth and steps Adam (lr 0.05, batch 256, no clipping). Extraction rounds, takes ``abs`` and casts to
int; µops, dispatch width and ROB size are at least 1.

Two deliberate departures from the original, both explained in the closing figures:

* The start is either DiffTune's (one random §3 sample, ``random_start``) or any table, e.g. llvm-mca's
  defaults; the original only had the first.
* Resource *group* columns are never drawn in the data set (§3's ``use_groups=False``), so the surrogate
  never saw them vary and its gradient there means nothing: they stay at the start table's values.

Validation is the caller's, in the real simulator: given a ``validate`` function (table → MAPE on blocks the
learning never sees), the start and the table extracted every ``validate_every`` steps are scored, and the best
one is returned. The surrogate's loss can fall while the simulator's error rises (a table the surrogate
mispredicts); this keeps what the simulator confirms, so learning never ends worse than its start there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates._torch import torch
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import BOUNDS, N_SLOTS, OpParams, ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.surrogate import Surrogate, param_matrix, table_globals
from engine.surrogates.difftune.train import mape


@dataclass(frozen=True)
class LearnConfig:
    """§5's table-learning settings (``epochs`` 1 in the original)."""

    lr: float = 0.05
    batch: int = 256
    epochs: int = 1
    seed: int = 0
    validate_every: int = 100

    def __post_init__(self) -> None:
        for name in ("batch", "epochs", "validate_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"{name}: must be a positive integer, got {brief(value)}")
        if isinstance(self.lr, bool) or not isinstance(self.lr, int | float) or not (math.isfinite(self.lr) and self.lr > 0):
            raise UserError(f"lr: must be a positive finite number, got {brief(self.lr)}")


@dataclass(frozen=True)
class Learned:
    """The extracted table (the best validated one when validation was given), the learning curve (step,
    epoch, loss: the surrogate's MAPE on the batch) and the validation curve (step, mape; step 0 the start)."""

    table: ParamTable
    history: pd.DataFrame
    validation: pd.DataFrame


def block_keys(blocks: Sequence[Block]) -> list[str]:
    """The opcode keys of ``blocks``, sorted: θ's rows."""
    return sorted({i.key for b in blocks for i in b.instructions})


def random_start(blocks: Sequence[Block], model: ParamTable, seed: int = 0) -> ParamTable:
    """DiffTune's start: one §3 sample over the blocks' opcodes with ``model``'s resource model."""
    return sample_table(block_keys(blocks), model, seed)


def _check_model(surrogate: Surrogate, start: ParamTable) -> None:
    if start.resources != surrogate.featuriser.resources:
        raise UserError(f"start table: resource model {brief(start.resources)} is not the surrogate's "
                        f"{brief(surrogate.featuriser.resources)} (start from a table of the data set's arch)")


def _bounded(values: np.ndarray, fields: Sequence[str]) -> np.ndarray:
    """Round, abs (§5), then each column into its field's :data:`BOUNDS` (a diverged value, NaN included, lands on
    a bound instead of making a table the simulator refuses)."""
    low, high = (np.array([BOUNDS[f][i] for f in fields], dtype=float) for i in (0, 1))
    rounded = np.nan_to_num(np.abs(np.round(values)), nan=0.0, posinf=np.inf)
    bounded: np.ndarray = np.clip(rounded, low, high).astype(int)
    return bounded


def _extract(theta: np.ndarray, widths: np.ndarray, keys: Sequence[str], start: ParamTable) -> ParamTable:
    """Round, abs, int (§5), within the table's bounds; µops ≥ 1; group columns and rows of other keys as in ``start``."""
    n_res = len(start.resources)
    values = _bounded(theta, ["port_cycles"] * n_res + ["read_advance"] * N_SLOTS + ["uops", "latency"])
    unit_names = [u for u, _ in start.units]
    rows = dict(start.rows)
    for k, key in enumerate(keys):
        old = start.rows.get(key)
        groups = [(g, c) for g, c in (old.port_cycles if old else ()) if g not in unit_names]
        units = [(u, int(values[k, j])) for j, u in enumerate(unit_names) if values[k, j] > 0]
        rows[key] = OpParams(uops=max(int(values[k, n_res + N_SLOTS]), 1), latency=int(values[k, n_res + N_SLOTS + 1]),
                             read_advance=tuple(int(v) for v in values[k, n_res:n_res + N_SLOTS]),
                             port_cycles=tuple(sorted(units + groups)))
    width, rob = (int(v) for v in _bounded(widths, ("dispatch_width", "rob_size")))
    provenance = {"source": "DiffTune parameter learning", "start": start.provenance.get("source", "")}
    # The start's model (units, groups, idioms, register files, buffers...) is kept: only globals and rows are learnt.
    return replace(start, dispatch_width=width, rob_size=rob, rows=rows, provenance=provenance)


def learn_table(surrogate: Surrogate, blocks: Sequence[Block], truth: np.ndarray, start: ParamTable,
                config: LearnConfig = LearnConfig(), validate: Callable[[ParamTable], float] | None = None) -> Learned:
    """Learn a table under which the surrogate predicts ``truth`` (cycles per 100 iterations of each block);
    with ``validate``, return the start or an extracted table, whichever it scores lowest."""
    truth = np.asarray(truth, dtype=np.float32)
    if len(truth) != len(blocks) or not len(blocks):
        raise UserError(f"truth: {len(truth)} values for {len(blocks)} blocks")
    if not (np.isfinite(truth).all() and (truth > 0).all()):
        raise UserError("truth: every block needs a positive, finite cycle count")
    _check_model(surrogate, start)
    network, featuriser = surrogate.network, surrogate.featuriser
    network.train(False)
    for weight in network.parameters():
        weight.requires_grad_(False)
    keys = block_keys(blocks)
    position = {k: i for i, k in enumerate(keys)}
    n_units = len(start.units)
    n_groups = len(start.groups)
    theta = torch.nn.Parameter(torch.from_numpy(param_matrix(start, keys, featuriser.resources)))
    widths = torch.nn.Parameter(torch.from_numpy(table_globals(start)))
    frozen = torch.zeros(theta.shape[1], dtype=torch.bool)
    frozen[n_units:n_units + n_groups] = True  # group columns: never varied in the data set
    index = [torch.tensor([position[i.key] for i in b.instructions]) for b in blocks]
    optimiser = torch.optim.Adam([theta, widths], lr=config.lr)
    torch.manual_seed(config.seed)
    rng = np.random.RandomState(config.seed)
    history: list[dict[str, Any]] = []
    scored: list[tuple[float, int, ParamTable]] = []

    def check(step: int) -> None:
        if validate is not None:
            table = start if step == 0 else _extract(theta.detach().numpy(), widths.detach().numpy(), keys, start)
            scored.append((float(validate(table)), step, table))

    check(0)
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(len(blocks))
        for start_at in range(0, len(order), config.batch):
            batch = order[start_at:start_at + config.batch]
            tokens, block_of = featuriser.block_inputs([blocks[i] for i in batch])
            rows = torch.nn.utils.rnn.pad_sequence([theta.abs()[index[i]] for i in batch], batch_first=True)
            globals_ = widths.abs().unsqueeze(0).expand(len(batch), -1)
            optimiser.zero_grad()
            loss = mape(network(tokens, block_of, rows, globals_), torch.from_numpy(truth[batch]))
            torch.autograd.backward(loss)
            assert theta.grad is not None
            theta.grad[:, frozen] = 0
            optimiser.step()
            history.append({"step": len(history) + 1, "epoch": epoch, "loss": float(loss.detach())})
            if len(history) % config.validate_every == 0:
                check(len(history))
    if validate is not None and scored[-1][1] != len(history):
        check(len(history))
    curve = pd.DataFrame(history, columns=["step", "epoch", "loss"])
    validation = pd.DataFrame([(step, score) for score, step, _ in scored], columns=["step", "mape"])
    if validate is None:
        return Learned(_extract(theta.detach().numpy(), widths.detach().numpy(), keys, start), curve, validation)
    return Learned(min(scored, key=lambda s: s[0])[2], curve, validation)
