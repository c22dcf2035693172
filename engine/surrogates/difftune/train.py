"""Training DiffTune's surrogate (difftune.md §5): MAPE, Adam, clipping, an 80/10/10 split by block.

A data set is (block index, seed, cycles) rows over a list of blocks and the model table whose resource
model the random tables were drawn with: ``sample_table(block keys, model, seed)`` rebuilds each θ, so a
stored data set plugs in unchanged. Each epoch ends with a validation MAPE and a checkpoint (network,
optimiser, epoch, EMA, history, vocabulary, configuration); ``train`` on a folder holding one resumes after
its epoch. Batch order depends only on (seed, epoch) and the network's start only on the seed, so a resumed
run ends with the same weights as one that never stopped.

A checkpoint holds only tensors and plain values (numbers, text, lists, dicts) and is read with
``torch.load(weights_only=True)``: one received from elsewhere cannot run code, and one holding anything else
is refused. Checkpoints written before that rule was enforced already held nothing else, so they still load.
"""

from __future__ import annotations

import json
import math
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates._torch import torch
from engine.surrogates.difftune.decode import Block
from engine.surrogates.difftune.encoding import EncodedSamples, encode
from engine.surrogates.difftune.params import ParamTable, from_document
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.surrogate import Featuriser, ParamLstm, Surrogate, SurrogateConfig, capacities
from engine.surrogates.difftune.tokens import Vocabulary

CHECKPOINT = "checkpoint.pt"
HISTORY = "history.csv"
#: numpy's ``RandomState`` (the split, the batch order) takes seeds below this.
MAX_SEED = 2**32
#: What a checkpoint holds; ``_save`` writes exactly these.
_CONTENTS = ("config", "epoch", "step", "ema", "history", "model", "network", "optimiser", "vocabulary", "resources")
_RETRAIN = "retrain the surrogate (delete its folder, then tunelab difftune train)"
#: Batches sorted by block length within windows of this many batches: long blocks pad few others.
_BUCKET = 16


def split_blocks(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Block indices for train, validation and test (80/10/10 of a ``RandomState(seed)`` shuffle, as DiffTune)."""
    order = np.random.RandomState(seed).permutation(n)
    a, b = int(0.8 * n), int(0.9 * n)
    return np.sort(order[:a]), np.sort(order[a:b]), np.sort(order[b:])


@dataclass(frozen=True)
class Samples:
    """Simulated samples: ``frame`` has columns ``block`` (index into ``blocks``), ``seed`` and ``cycles``."""

    frame: pd.DataFrame
    blocks: Sequence[Block]
    model: ParamTable

    def table(self, block: int, seed: int) -> ParamTable:
        """The random θ of one sample, rebuilt from its seed."""
        return sample_table({i.key for i in self.blocks[block].instructions}, self.model, seed)

    def restrict(self, blocks: np.ndarray) -> Samples:
        """The samples of some blocks (e.g. one split)."""
        return replace(self, frame=self.frame[self.frame["block"].isin(blocks)].reset_index(drop=True))


@dataclass(frozen=True)
class TrainConfig:
    """Sizes and §5's optimisation settings; everything a resumed run must share with the first."""

    embedding: int = 64
    hidden: int = 64
    layers: int = 2
    batch: int = 256
    lr: float = 1e-3
    clip: float = 5.0
    ema_beta: float = 0.995
    seed: int = 0
    split_seed: int = 0
    #: The throughput bound under the network's prediction (surrogate.py); checkpoints from before it had none.
    bound: bool = True

    def __post_init__(self) -> None:
        """Refuse what training would only trip over later (numpy's seeds stop at 2**32, after the row is stored)."""
        for name in ("embedding", "hidden", "layers", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"{name}: must be a positive integer, got {brief(value)}")
        for name in ("seed", "split_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_SEED:
                raise UserError(f"{name}: must be an integer from 0 to {MAX_SEED - 1:,}, got {brief(value)}")
        for name in ("lr", "clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
                raise UserError(f"{name}: must be a positive finite number, got {brief(value)}")
        if isinstance(self.ema_beta, bool) or not isinstance(self.ema_beta, int | float) or not 0 <= self.ema_beta < 1:
            raise UserError(f"ema_beta: must be a number from 0 up to 1 (excluded), got {brief(self.ema_beta)}")


def mape(predicted: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """§5's loss: mean(|ŷ − y| / y)."""
    return ((predicted - truth).abs() / truth).mean()


def _batches(lengths: np.ndarray, size: int, rng: np.random.RandomState) -> list[np.ndarray]:
    """Shuffled batches, each of blocks of similar length."""
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    window = size * _BUCKET
    for start in range(0, len(order), window):
        chunk = order[start:start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + size] for i in range(0, len(chunk), size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _evaluate(surrogate: Surrogate, data: EncodedSamples, batch: int) -> float:
    surrogate.network.train(False)
    order = np.argsort(data.lengths, kind="stable")
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(order), batch):
            index = order[start:start + batch]
            inputs, cycles = data.batch(index)
            total += float(mape(surrogate.network(*inputs), cycles)) * len(index)
    return total / max(len(order), 1)


def device_of(name: str | None) -> torch.device:
    """``name`` as a torch device (default the CPU); one that this machine lacks is refused in one line."""
    try:
        device = torch.device(name or "cpu")
    except RuntimeError:
        raise UserError(f"device: {brief(name)} is not a torch device name (cpu, cuda, cuda:1, ...)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device: {brief(name)} asked for, but this torch sees no CUDA GPU")
    if device.type not in ("cpu", "cuda"):
        raise UserError(f"device: {brief(name)} is not supported (cpu or cuda)")
    return device


def evaluate(surrogate: Surrogate, samples: Samples, batch: int = 1024, device: str | None = None,
             workers: int = 1) -> float:
    """MAPE of the surrogate against the simulator on ``samples`` (held-out blocks × random θ), computed on
    ``device`` (the network is put back on the CPU after)."""
    where = device_of(device)
    surrogate.network.to(where)
    try:
        return _evaluate(surrogate, encode(samples.frame, samples.blocks, samples.model, surrogate.featuriser, workers).to(where), batch)
    finally:
        surrogate.network.to("cpu")


def _surrogate(config: TrainConfig, vocabulary: Vocabulary, model: ParamTable) -> Surrogate:
    featuriser = Featuriser(vocabulary, model.resources)
    torch.manual_seed(config.seed)
    network = ParamLstm(SurrogateConfig(len(vocabulary), featuriser.features, config.embedding, config.hidden, config.layers,
                                        capacities(model) if config.bound else ()))
    return Surrogate(network, featuriser)


def _save(folder: Path, surrogate: Surrogate, optimiser: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Write the checkpoint next to its final name first, so a kill mid-write leaves the previous one."""
    tmp = folder / (CHECKPOINT + ".tmp")
    torch.save({**state, "network": surrogate.network.state_dict(), "optimiser": optimiser.state_dict(),
                "vocabulary": surrogate.featuriser.vocabulary.to_document(), "resources": surrogate.featuriser.resources}, tmp)
    tmp.replace(folder / CHECKPOINT)
    pd.DataFrame(state["history"]).to_csv(folder / HISTORY, index=False)


@dataclass(frozen=True)
class _Checkpoint:
    """A checkpoint read back: its file, its configuration and its values (tensors and plain values only)."""

    path: Path
    config: TrainConfig
    data: dict[str, Any]

    def surrogate(self) -> Surrogate:
        """The network with the checkpoint's vocabulary, resource model and weights."""
        with _fitting(self.path):
            model = from_document(self.data["model"])
            if model.resources != list(self.data["resources"]):
                raise ValueError(f"resources {self.data['resources']} are not its model's {model.resources}")
            surrogate = _surrogate(self.config, Vocabulary.from_document(self.data["vocabulary"]), model)
            surrogate.network.load_state_dict(self.data["network"])
        return surrogate

    def resume(self, optimiser: torch.optim.Optimizer) -> dict[str, Any]:
        """The optimiser's state put back; the training state (epoch, step, EMA, history) to carry on from."""
        with _fitting(self.path):
            optimiser.load_state_dict(self.data["optimiser"])
            ema = self.data["ema"]
            return {"epoch": int(self.data["epoch"]), "step": int(self.data["step"]),
                    "ema": None if ema is None else float(ema), "history": list(self.data["history"])}


def _reason(error: BaseException) -> str:
    """An exception as a short phrase: its type and the start of its first line."""
    first = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {brief(first, 100)}"


@contextmanager
def _fitting(path: Path) -> Iterator[None]:
    """What a malformed checkpoint's values raise as they are put in place, as one line naming the file."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, RuntimeError) as error:  # UserError is a ValueError
        raise UserError(f"checkpoint {str(path)!r}: its values do not fit a surrogate ({_reason(error)}); {_RETRAIN}") from None


def _checkpoint(folder: Path) -> _Checkpoint:
    """A folder's checkpoint, read with ``weights_only`` (its pickle can build tensors and plain values, never run
    code); a file that holds anything else, or is damaged, is refused in one line naming it."""
    path = folder / CHECKPOINT
    if not path.is_file():
        raise UserError(f"checkpoint {str(path)!r}: not found")
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        raise UserError(f"checkpoint {str(path)!r}: refused, it holds Python objects besides tensors and plain values "
                        f"(loading them could run code); {_RETRAIN}") from None
    except Exception as error:  # untrusted bytes fail to parse in many ways: RuntimeError, EOFError, KeyError, ...
        raise UserError(f"checkpoint {str(path)!r}: cannot be read ({_reason(error)}); {_RETRAIN}") from None
    missing = [key for key in _CONTENTS if not isinstance(data, dict) or key not in data]
    if missing:
        raise UserError(f"checkpoint {str(path)!r}: not a DiffTune surrogate checkpoint (no {missing[0]!r}); {_RETRAIN}")
    with _fitting(path):
        return _Checkpoint(path, TrainConfig(**{"bound": False, **data["config"]}), data)


def load_surrogate(folder: str | Path) -> Surrogate:
    """The surrogate of a training folder's last checkpoint, in evaluation mode."""
    surrogate = _checkpoint(Path(folder)).surrogate()
    surrogate.network.train(False)
    return surrogate


def history(folder: str | Path) -> pd.DataFrame:
    """Training curves so far (epoch, step, loss, ema, val_mape; val_mape only on each epoch's last step)."""
    path = Path(folder) / HISTORY
    return pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=["epoch", "step", "loss", "ema", "val_mape"])


def train(samples: Samples, folder: str | Path, epochs: int, config: TrainConfig = TrainConfig(),
          max_seconds: float | None = None, on_step: Callable[[dict[str, Any]], None] | None = None,
          on_epoch: Callable[[dict[str, Any]], None] | None = None, device: str | None = None,
          workers: int = 1) -> tuple[Surrogate, pd.DataFrame]:
    """Train until ``epochs`` epochs are done, resuming from ``folder``'s checkpoint when it has one (its
    configuration must be ``config``); returns the surrogate (on the CPU) and the history. With ``max_seconds``,
    stop after the epoch past which another epoch as long as the last would overrun it (a later call resumes).
    ``on_step`` gets each step's history record, ``on_epoch`` the last one of each checkpointed epoch.
    ``device`` trains there (a GPU: ``cuda``); ``workers`` processes encode the samples' tables."""
    where = device_of(device)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    train_blocks, val_blocks, _ = split_blocks(len(samples.blocks), config.split_seed)
    resumed = _checkpoint(out) if (out / CHECKPOINT).is_file() else None
    if resumed is not None:
        if resumed.config != config:
            raise UserError(f"checkpoint {out}: trained with {brief(json.dumps(asdict(resumed.config)))}, not this configuration")
        if resumed.data["resources"] != list(samples.model.resources):
            raise UserError(f"checkpoint {out}: trained on resources {brief(resumed.data['resources'])}, not this "
                            f"data set's {brief(list(samples.model.resources))}")
        surrogate = resumed.surrogate()
    else:
        surrogate = _surrogate(config, Vocabulary.build(samples.blocks[i] for i in train_blocks), samples.model)
    surrogate.network.to(where)
    optimiser = torch.optim.Adam(surrogate.network.parameters(), lr=config.lr, betas=(0.9, 0.999))
    state: dict[str, Any] = {"epoch": 0, "step": 0, "ema": None, "history": [], "config": asdict(config),
                             "model": samples.model.to_document()}
    if resumed is not None:
        state.update(resumed.resume(optimiser))
    if state["epoch"] >= epochs:
        surrogate.network.to("cpu")
        return surrogate, pd.DataFrame(state["history"])
    data, val = (encode(part.frame, part.blocks, part.model, surrogate.featuriser, workers).to(where)
                 for part in (samples.restrict(train_blocks), samples.restrict(val_blocks)))
    begun = time.perf_counter()
    for epoch in range(state["epoch"] + 1, epochs + 1):
        started = time.perf_counter()
        surrogate.network.train()
        batches = _batches(data.lengths, config.batch, np.random.RandomState([config.seed, epoch]))
        for n, index in enumerate(batches, start=1):
            optimiser.zero_grad()
            inputs, cycles = data.batch(index)
            loss = mape(surrogate.network(*inputs), cycles)
            torch.autograd.backward(loss)
            torch.nn.utils.clip_grad_norm_(surrogate.network.parameters(), config.clip)
            optimiser.step()
            state["step"] += 1
            value = float(loss.detach())
            state["ema"] = value if state["ema"] is None else config.ema_beta * state["ema"] + (1 - config.ema_beta) * value
            val_mape = _evaluate(surrogate, val, 4 * config.batch) if n == len(batches) and len(val) else float("nan")
            state["history"].append({"epoch": epoch, "step": state["step"], "loss": value, "ema": state["ema"],
                                     "val_mape": val_mape, "seconds": time.perf_counter() - started,
                                     "batches": len(batches)})
            if on_step is not None:
                on_step(state["history"][-1])
        state["epoch"] = epoch
        _save(out, surrogate, optimiser, state)
        if on_epoch is not None:
            on_epoch(state["history"][-1])
        now = time.perf_counter()
        if max_seconds is not None and (now - begun) + (now - started) > max_seconds:
            break
    surrogate.network.train(False)
    surrogate.network.to("cpu")
    return surrogate, pd.DataFrame(state["history"])


def model_table(folder: str | Path) -> ParamTable:
    """The model table a folder's surrogate was trained under (its resource model fixes the row columns)."""
    return from_document(_checkpoint(Path(folder)).data["model"])
