"""DiffTune's ``ParamLstm`` (difftune.md §4): a hierarchical LSTM of (block, parameter table) → cycles.

A token LSTM turns each instruction into a vector; that vector is joined with the instruction's parameter
row and the two globals (all ÷ 100) and an instruction LSTM reads the block; a linear head gives the
prediction. The token LSTM sees only tokens, so it runs once per *distinct* block of a batch: a data set
repeats each block under many tables, and that is most of the cost saved.

Parameter learning (§5) freezes this network and trains the rows: :meth:`ParamLstm.forward` takes them as
a float tensor ``[batch, instructions, features]`` (columns :func:`feature_names`, in table units, the
÷ 100 is inside) plus globals ``[batch, 2]``, so gradients flow to whatever produced them.

Target scaling (deviation from §4.6's cycles ÷ 10,000): the head predicts log cycles per instruction and
iteration, the prediction is ``100 · n · exp(head)``. It is positive, so MAPE never sees a sign flip, and
the head's output stays O(1) for blocks of 1 to 200 instructions.

Throughput bound (a deviation, on by default: ``SurrogateConfig.capacities``): the prediction is instead
``bound · exp(head)``, where ``bound`` is the larger of two throughput limits computed from θ itself, dispatch
(100 · Σ µops ÷ dispatch width) and the busiest resource (100 · max over columns of Σ cycles ÷ the units the
column stands for), and the head also reads both limits' logs per instruction. Why: on held-out blocks of
the Zen 3 data set that bound alone is within 12.5% MAPE of the simulator; with it, a hidden-64 network trained
one epoch on a CPU reaches 9.6% where the same network without it reaches 27.9% (``bench/difftune_surrogate.py``).
The network learns only what the bound misses (dependency chains, the ROB, scheduling), and the gradient
reaches θ through the bound too.

Sizes: CPU runs use hidden 64-128 and 2 layers (the defaults below); DiffTune's full size (for a GPU) is
``SurrogateConfig(embedding=256, hidden=256, layers=4)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from engine.surrogates._torch import nn, torch
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.params import N_SLOTS, ParamTable
from engine.surrogates.difftune.tokens import Vocabulary

#: DiffTune divides every parameter value by this before the instruction LSTM.
PARAM_SCALE = 100.0
ITERATIONS = 100


def feature_names(resources: Sequence[str]) -> list[str]:
    """Columns of a parameter row: one per resource (net port cycles), the ReadAdvance slots, µops, latency."""
    return [*resources, *(f"ra{i}" for i in range(N_SLOTS)), "uops", "latency"]


def param_matrix(table: ParamTable, keys: Sequence[str], resources: Sequence[str]) -> np.ndarray:
    """Rows of ``keys`` as float32 ``[len(keys), features]``; a key the table lacks is all zeros (DiffTune's
    re-indexing). ``resources`` fixes the columns, so tables of one resource model share a network."""
    column = {r: i for i, r in enumerate(resources)}
    out = np.zeros((len(keys), len(resources) + N_SLOTS + 2), dtype=np.float32)
    base = len(resources)
    for k, key in enumerate(keys):
        row = table.rows.get(key)
        if row is None:
            continue
        for name, cycles in row.port_cycles:
            out[k, column[name]] = cycles
        out[k, base:base + N_SLOTS] = row.read_advance
        out[k, base + N_SLOTS:] = (row.uops, row.latency)
    return out


def capacities(model: ParamTable) -> tuple[float, ...]:
    """Per resource column, the units it stands for: a unit's count, a group's members' counts summed."""
    count = dict(model.units)
    return tuple([float(c) for _, c in model.units] + [float(sum(count[m] for m in members)) for _, members in model.groups])


def table_globals(table: ParamTable) -> np.ndarray:
    """The two learnt globals: dispatch width, ROB size."""
    return np.array([table.dispatch_width, table.rob_size], dtype=np.float32)


@dataclass(frozen=True)
class SurrogateConfig:
    """Network sizes; ``vocabulary`` and ``features`` come from the data (tokens, resource model)."""

    vocabulary: int
    features: int
    embedding: int = 64
    hidden: int = 64
    layers: int = 2
    #: Units each resource column stands for (:func:`capacities`); empty: no throughput bound (the first design).
    capacities: tuple[float, ...] = ()

    def to_document(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BlockTokens:
    """Distinct blocks' tokens: ids ``[U, I, T]`` (0-padded), tokens per instruction ``[U, I]``, instructions ``[U]``."""

    ids: torch.Tensor
    token_counts: torch.Tensor
    lengths: torch.Tensor


def pad_tokens(encoded: Sequence[Sequence[Sequence[int]]]) -> BlockTokens:
    """Pack token ids (``Vocabulary.encode``'s output) into padded tensors."""
    n_instr = max(len(b) for b in encoded)
    n_tok = max(len(seq) for b in encoded for seq in b)
    ids = np.zeros((len(encoded), n_instr, n_tok), dtype=np.int64)
    counts = np.zeros((len(encoded), n_instr), dtype=np.int64)
    for u, block in enumerate(encoded):
        for i, seq in enumerate(block):
            ids[u, i, :len(seq)] = seq
            counts[u, i] = len(seq)
    return BlockTokens(torch.from_numpy(ids), torch.from_numpy(counts), torch.tensor([len(b) for b in encoded]))


def _last(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Output at each sequence's last real step; for a unidirectional LSTM, its final hidden state."""
    index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.shape[2])
    return outputs.gather(1, index).squeeze(1)


class ParamLstm(nn.Module):
    """Token LSTM → instruction vector ⊕ parameter row ⊕ globals → instruction LSTM → linear head."""

    def __init__(self, config: SurrogateConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocabulary, config.embedding, padding_idx=0)
        self.token_lstm = nn.LSTM(config.embedding, config.hidden, config.layers, batch_first=True)
        self.instr_lstm = nn.LSTM(config.hidden + config.features + 2, config.hidden, config.layers, batch_first=True)
        self.head = nn.Linear(config.hidden + (2 if config.capacities else 0), 1)
        self.capacity: torch.Tensor
        self.register_buffer("capacity", torch.tensor(config.capacities, dtype=torch.float32), persistent=False)

    def instruction_vectors(self, tokens: BlockTokens) -> torch.Tensor:
        """``[U, I, hidden]``; zeros for padding instructions."""
        mask = tokens.token_counts > 0
        seqs = tokens.ids[mask]
        outputs, _ = self.token_lstm(self.embed(seqs))
        vectors: torch.Tensor = outputs.new_zeros((*tokens.token_counts.shape, self.config.hidden))
        vectors[mask] = _last(outputs, tokens.token_counts[mask])
        return vectors

    def forward(self, tokens: BlockTokens, block_of: torch.Tensor, rows: torch.Tensor, globals_: torch.Tensor) -> torch.Tensor:
        """Predicted cycles per 100 iterations ``[B]`` for sample b = block ``block_of[b]`` of ``tokens`` under
        parameter rows ``rows[b]`` (``[B, I, features]``, padding rows ignored) and ``globals_[b]`` (``[B, 2]``)."""
        vectors = self.instruction_vectors(tokens)[block_of]
        n_instr = vectors.shape[1]
        params = torch.cat([rows[:, :n_instr], globals_.unsqueeze(1).expand(-1, n_instr, -1)], dim=2) / PARAM_SCALE
        outputs, _ = self.instr_lstm(torch.cat([vectors, params], dim=2))
        lengths = tokens.lengths[block_of]
        per_instruction = ITERATIONS * lengths.to(outputs.dtype)
        if not self.config.capacities:
            return per_instruction * torch.exp(self.head(_last(outputs, lengths)).squeeze(1))
        dispatch, busiest = self.bounds(rows[:, :n_instr], globals_, lengths)
        limits = torch.stack([torch.log(dispatch / per_instruction), torch.log(busiest / per_instruction)], dim=1)
        return torch.maximum(dispatch, busiest) * torch.exp(self.head(torch.cat([_last(outputs, lengths), limits], dim=1)).squeeze(1))

    def bounds(self, rows: torch.Tensor, globals_: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cycles per 100 iterations ``[B]`` that dispatch alone and the busiest resource alone need, from θ's
        rows ``[B, I, features]`` (µops at least 1, cycles at least 0, width at least 1, as the simulator
        reads them) over each block's ``lengths`` instructions; at least 1 cycle, so their logs are finite."""
        real = (torch.arange(rows.shape[1], device=rows.device).unsqueeze(0) < lengths.unsqueeze(1)).to(rows.dtype)
        n_resources = len(self.config.capacities)
        uops = rows[:, :, n_resources + N_SLOTS].clamp(min=1) * real
        dispatch = ITERATIONS * uops.sum(dim=1) / globals_[:, 0].clamp(min=1)
        pressure = (rows[:, :, :n_resources].clamp(min=0) * real.unsqueeze(2)).sum(dim=1) / self.capacity
        return dispatch.clamp(min=1), (ITERATIONS * pressure.max(dim=1).values).clamp(min=1)


class Featuriser:
    """(blocks, tables) → the network's inputs; keeps each block's tokens once it has seen the block."""

    def __init__(self, vocabulary: Vocabulary, resources: Sequence[str]) -> None:
        self.vocabulary = vocabulary
        self.resources = list(resources)
        self._tokens: dict[str, list[list[int]]] = {}

    @property
    def features(self) -> int:
        return len(self.resources) + N_SLOTS + 2

    def tokens(self, blocks: Sequence[Block]) -> list[list[list[int]]]:
        todo = [b for b in blocks if b.hex not in self._tokens]
        for block, ids in zip(todo, self.vocabulary.encode(todo)):
            self._tokens[block.hex] = ids
        return [self._tokens[b.hex] for b in blocks]

    def block_inputs(self, blocks: Sequence[Block]) -> tuple[BlockTokens, torch.Tensor]:
        """Tokens of the distinct blocks and, per sample, which of them it is (repeated blocks tokenised once)."""
        distinct = {b.hex: b for b in blocks}
        position = {h: i for i, h in enumerate(distinct)}
        return pad_tokens(self.tokens(list(distinct.values()))), torch.tensor([position[b.hex] for b in blocks])

    def batch(self, blocks: Sequence[Block], tables: Sequence[ParamTable]) -> tuple[BlockTokens, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Forward's arguments for ``blocks[b]`` under ``tables[b]``."""
        rows = [param_matrix(t, [x.key for x in b.instructions], self.resources) for b, t in zip(blocks, tables, strict=True)]
        return (*self.block_inputs(blocks), stack_rows(rows), torch.from_numpy(np.stack([table_globals(t) for t in tables])))


def stack_rows(rows: Sequence[np.ndarray]) -> torch.Tensor:
    """Per-sample ``[n_i, features]`` parameter rows → ``[B, max n_i, features]``, zeros past each block's end."""
    out = np.zeros((len(rows), max(len(r) for r in rows), rows[0].shape[1]), dtype=np.float32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return torch.from_numpy(out)


@dataclass
class Surrogate:
    """A network with the featuriser it was trained with: what predicts, checkpoints and is frozen for learning."""

    network: ParamLstm
    featuriser: Featuriser

    def predict(self, blocks: Sequence[Block], tables: Sequence[ParamTable]) -> np.ndarray:
        """Predicted cycles per 100 iterations of ``blocks[i]`` under ``tables[i]``."""
        self.network.train(False)
        with torch.no_grad():
            predicted: torch.Tensor = self.network(*self.featuriser.batch(blocks, tables))
        return predicted.numpy()
