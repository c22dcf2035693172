"""DiffTune's use cases: measure BHive blocks on this CPU into the store, resumably.

``tunelab blocks measure`` and the Surrogates page both come here. Measurements are stored batch by
batch under this CPU's identity and a pass number, so an interrupted run resumes where it stopped
and experiments never mix CPUs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from engine.errors import UserError
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.measure import Settings, cpu_identity, measure, nearest_mcpu
from storage import Store
from storage.difftune import block_measurements, save_block_measurements, save_cpu

#: done, total (blocks of this run, stored ones included)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MeasuredBlocks:
    """What one ``measure_blocks`` call did."""

    cpu_id: str
    mcpu: str
    pass_number: int
    selected: int
    already_stored: int
    measured: int
    by_status: dict[str, int]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def this_cpu(store: Store) -> tuple[str, str]:
    """(id, nearest -mcpu) of this machine's CPU, recorded in the store on first sight."""
    identity = cpu_identity()
    mcpu = nearest_mcpu(identity)
    save_cpu(store, {"cpu_id": identity.short_id, "vendor": identity.vendor, "family": identity.family,
                     "model": identity.model, "stepping": identity.stepping, "microcode": identity.microcode,
                     "model_name": identity.model_name, "mcpu": mcpu})
    return identity.short_id, mcpu


def measure_blocks(store: Store, *, limit: int | None = None, source: str = "bhive", pass_: int = 1,
                   settings: Settings = Settings(), progress: Progress | None = None) -> MeasuredBlocks:
    """Measure the selected blocks (:func:`engine.surrogates.difftune.bhive.select`) not yet stored for
    this CPU and pass (or stored as noisy: the machine was disturbed), storing each batch as it completes."""
    started = time.monotonic()
    cpu_id, mcpu = this_cpu(store)
    blocks = bhive.select(limit, source)
    previous = block_measurements(store, cpu_id, pass_)
    stored = set(previous.loc[previous["status"] != "noisy", "hex"])  # a noisy batch is measured again
    todo = [h for h in blocks if h not in stored]
    counts: dict[str, int] = {}
    done = len(blocks) - len(todo)
    if progress:
        progress(done, len(blocks))
    for start in range(0, len(todo), settings.batch_size):
        batch = todo[start:start + settings.batch_size]
        results = measure(batch, settings)
        save_block_measurements(store, cpu_id, pass_, stored_rows(results, settings))
        for status, n in results["status"].value_counts().items():
            counts[str(status)] = counts.get(str(status), 0) + int(n)
        done += len(batch)
        if progress:
            progress(done, len(blocks))
    return MeasuredBlocks(cpu_id, mcpu, pass_, len(blocks), len(blocks) - len(todo), len(todo), counts,
                          time.monotonic() - started)


def stored_rows(results: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """The harness's results in the store's columns: every clean repeat (TSC ticks) of both unroll factors
    kept, with the unrolls and the calibration they were converted with."""
    return pd.DataFrame({
        "hex": results["hex"], "status": results["status"], "cycles_min": results["cycles100"],
        "cycles_median": results["cycles100_median"],
        "repeats": [{"unrolls": list(settings.unrolls), "ticks_a": list(a), "ticks_b": list(b), "ticks_per_cycle": r}
                    if len(a) else None
                    for a, b, r in zip(results["clean_a"], results["clean_b"], results["ticks_per_cycle"])],
        "error": [reason or None for reason in results["reason"]],
    })


def measurements_table(store: Store, cpu_id: str | None = None) -> pd.DataFrame:
    """One row per block measured on one CPU (this one unless named): status and cycles per 100 iterations
    (minimum and median) of each pass side by side, ``_p2`` ... for the later passes."""
    cpu = cpu_id or this_cpu(store)[0]
    rows = block_measurements(store, cpu)
    if rows.empty:
        raise UserError(f"cpu {cpu}: no measured blocks in this database")
    table = None
    for pass_, part in rows.groupby("pass", sort=True):
        suffix = "" if pass_ == 1 else f"_p{pass_}"
        part = part.set_index("hex")[["status", "cycles_min", "cycles_median", "error"]].add_suffix(suffix)
        table = part if table is None else table.join(part, how="outer")
    assert table is not None
    return table.reset_index()
