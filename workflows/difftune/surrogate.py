"""DiffTune's surrogate as a use case: train it on a stored simulated data set (resumable, checkpoints beside
the database, progress recorded after each epoch), score it on the held-out blocks, and load it back.

The split is by block over the data set's block list (80/10/10, ``split_seed``), so the experiments that
later learn tables with this surrogate use the same train/validation/test blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates._torch import available_cpus
from engine.surrogates.difftune.dataset import load_dataset
from engine.surrogates.difftune.params import from_document
from engine.surrogates.difftune.surrogate import Surrogate
from engine.surrogates.difftune.train import Samples, TrainConfig, device_of, evaluate, history, load_surrogate, split_blocks, train
from storage import Store
from storage.difftune.datasets import dataset
from storage.difftune.experiments import create_surrogate, surrogate, update_surrogate
from workflows.difftune.dataset import check_name, stored_job

#: Held-out samples scored after training (the test split's first ones, in sample order): enough for a MAPE
#: to two digits, bounded in time.
TEST_SAMPLES = 50_000


@dataclass(frozen=True)
class TrainedSurrogate:
    """What one ``train_surrogate`` call did."""

    name: str
    dataset: str
    folder: str
    epochs_done: int
    samples: int
    val_mape: float | None
    test_mape: float | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dataset_samples(store: Store, name: str) -> Samples:
    """A stored data set's rows with its blocks and resource model."""
    row = dataset(store, name)
    if row is None:
        raise UserError(f"dataset: no simulated data set named {brief(name)} (tunelab difftune dataset makes one)")
    job = stored_job(store, row)
    frame = load_dataset(Path(store.path).parent / row["folder"], int(row["samples_done"]), len(job.blocks))
    if frame.empty:
        raise UserError(f"dataset: {brief(name)} holds no samples yet")
    return Samples(frame, job.blocks, from_document(row["model"]))


def surrogate_folder(store: Store, name: str) -> Path:
    """``<database>.surrogates/<name>``: checkpoints travel with the database."""
    return Path(store.path).parent / f"{Path(store.path).name}.surrogates" / name


def train_surrogate(store: Store, *, dataset_name: str, name: str | None = None, epochs: int = 6,
                    config: TrainConfig = TrainConfig(), max_seconds: float | None = None,
                    on_step: Callable[[dict[str, Any]], None] | None = None, device: str | None = None) -> TrainedSurrogate:
    """Train (or continue training) the surrogate ``name`` (default ``<data set>-h<hidden>``) for ``epochs``
    epochs in all on ``device`` (default the CPU; ``cuda`` for a GPU), then score it on the test blocks. The
    samples' tables are drawn on as many processes as this one may use CPUs."""
    started = time.monotonic()
    name = name or f"{dataset_name}-h{config.hidden}"
    check_name(name)
    device_of(device)  # a GPU this machine lacks is refused before anything is recorded
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise UserError(f"epochs: must be a positive integer, got {brief(epochs)}")
    row = surrogate(store, name)
    if row is not None and row["dataset"] != dataset_name:
        raise UserError(f"name: surrogate {brief(name)} was trained on {brief(row['dataset'])}, not {brief(dataset_name)}")
    samples = dataset_samples(store, dataset_name)
    folder = surrogate_folder(store, name)
    if row is None:
        create_surrogate(store, name=name, dataset=dataset_name, config=asdict(config),
                         folder=str(folder.relative_to(Path(store.path).parent)))
    epoch_started = [time.monotonic()]

    def record(last: dict[str, Any]) -> None:
        now = time.monotonic()
        update_surrogate(store, name, epochs_done=int(last["epoch"]), val_mape=_finite(last["val_mape"]),
                         seconds=now - epoch_started[0])
        epoch_started[0] = now

    workers = available_cpus()
    trained, curves = train(samples, folder, epochs, config, max_seconds, on_step=on_step, on_epoch=record,
                            device=device, workers=workers)
    _, _, test_blocks = split_blocks(len(samples.blocks), config.split_seed)
    held_out = samples.restrict(test_blocks)
    held_out = Samples(held_out.frame.iloc[:TEST_SAMPLES], held_out.blocks, held_out.model)
    test_mape = evaluate(trained, held_out, device=device, workers=workers) if len(held_out.frame) else None
    done = int(curves["epoch"].max()) if len(curves) else 0
    val = curves["val_mape"].dropna()
    update_surrogate(store, name, epochs_done=done, val_mape=float(val.iloc[-1]) if len(val) else None, seconds=0.0,
                     test_mape=test_mape)
    return TrainedSurrogate(name, dataset_name, str(folder), done, len(samples.frame),
                            float(val.iloc[-1]) if len(val) else None, test_mape, time.monotonic() - started)


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def surrogate_record(store: Store, name: str) -> dict[str, Any]:
    """A surrogate's row; a name the store does not hold is a UserError saying what makes one."""
    row = surrogate(store, name)
    if row is None:
        raise UserError(f"surrogate: none named {brief(name)} (tunelab difftune train makes one)")
    return row


def stored_surrogate(store: Store, row: dict[str, Any]) -> Surrogate:
    """The network of a surrogate's last checkpoint (``row`` from :func:`surrogate_record`), read as tensors and
    plain values only: a checkpoint that holds anything else is refused, never run."""
    return load_surrogate(Path(store.path).parent / row["folder"])


def training_curves(store: Store, name: str) -> pd.DataFrame:
    """A surrogate's training history (loss per step, validation MAPE per epoch)."""
    return history(Path(store.path).parent / surrogate_record(store, name)["folder"])
