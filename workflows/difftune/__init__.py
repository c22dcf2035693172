"""DiffTune's use cases: measure BHive blocks on this CPU, decode blocks once, build and compare parameter
tables, and evaluate the simulator against llvm-mca or the measurements, all kept in the store.

``tunelab blocks``/``tunelab difftune`` and the Surrogates page both come here. Measurements are stored
batch by batch under this CPU's identity and a pass number, so an interrupted run resumes where it
stopped and experiments never mix CPUs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.runners.ckernel import cache_dir
from engine.study import check_study_name
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.categories import category
from engine.surrogates.difftune.decode import DECODER, Block, block_document, block_from_document, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.greedy import greedy_search
from engine.surrogates.difftune.llvm_mca import total_cycles
from engine.surrogates.difftune.measure import Settings, cpu_identity, measure, nearest_mcpu
from engine.surrogates.difftune.metrics import accuracy_table
from engine.surrogates.difftune.noise import RunNoise, read_measured, robust_truth, run_noise
from engine.surrogates.difftune.params import ParamTable, from_document, simple_table
from engine.surrogates.difftune.params import load as load_table
from engine.surrogates.difftune.simulate import simulated, timeline
from engine.surrogates.difftune.split import part_of
from storage import Store
from storage.difftune import (
    block_measurements,
    decoded,
    evaluation_predictions,
    evaluations,
    param_table,
    save_block_measurements,
    save_cpu,
    save_decoded,
    save_evaluation,
    save_param_table,
    search_blocks,
)

#: done, total (blocks of this run, stored ones included)
Progress = Callable[[int, int], None]
#: Suffixes of the table files commands read where a stored table's name may stand.
TABLE_FILES = (".json", ".parquet", ".txt")


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
    noise: RunNoise | None = None  # None when nothing was measured

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "noise": self.noise.to_dict() if self.noise is not None else None}


#: The highest pass number ``blocks measure`` takes.
MAX_PASS = 100


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
    measured = []
    for start in range(0, len(todo), settings.batch_size):
        batch = todo[start:start + settings.batch_size]
        results = measure(batch, settings)
        save_block_measurements(store, cpu_id, pass_, stored_rows(results))
        measured.append(results)
        for status, n in results["status"].value_counts().items():
            counts[str(status)] = counts.get(str(status), 0) + int(n)
        done += len(batch)
        if progress:
            progress(done, len(blocks))
    noise = None
    if measured:
        first = block_measurements(store, cpu_id, 1) if pass_ > 1 else None
        noise = run_noise(pd.concat(measured, ignore_index=True), settings.repeats, first)
    return MeasuredBlocks(cpu_id, mcpu, pass_, len(blocks), len(blocks) - len(todo), len(todo), counts,
                          time.monotonic() - started, noise)


def measure_passes(store: Store, *, passes: int, pass_: int = 1, limit: int | None = None, source: str = "bhive",
                   settings: Settings = Settings(), progress: Progress | None = None) -> list[MeasuredBlocks]:
    """:func:`measure_blocks` for passes ``pass_`` … ``pass_ + passes - 1`` in a row: on a machine whose neighbours
    disturb whole runs, each block's truth is the vote of many passes (engine.surrogates.difftune.noise)."""
    last = pass_ + passes - 1
    if passes < 1 or last > MAX_PASS:
        raise UserError(f"passes: {passes} passes from pass {pass_} would end at pass {last}; the last pass is {MAX_PASS}")
    return [measure_blocks(store, limit=limit, source=source, pass_=number, settings=settings, progress=progress)
            for number in range(pass_, last + 1)]


def stored_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The harness's results in the store's columns: every clean repeat (TSC ticks) of both unroll factors
    kept, with the unrolls and the calibration they were converted with."""
    return pd.DataFrame({
        "hex": results["hex"], "status": results["status"], "cycles_min": results["cycles100"],
        "cycles_median": results["cycles100_median"],
        "repeats": [{"unrolls": list(u), "ticks_a": list(a), "ticks_b": list(b), "ticks_per_cycle": r}
                    if len(a) else None
                    for a, b, r, u in zip(results["clean_a"], results["clean_b"], results["ticks_per_cycle"],
                                          results["unrolls"])],
        "error": [reason or None for reason in results["reason"]],
    })


def measured_source(store: Store, measured: str | None, arch: str | None) -> tuple[str, str, dict[str, float]]:
    """(CPU id, -mcpu, hex → cycles per 100 iterations) of a ``blocks export`` CSV, named by its CPU id
    (``amd-25-1-1.csv.gz``), or of this CPU's stored blocks: each block's robust value over its passes. Another
    CPU's file needs its -mcpu named (``arch``); this CPU's defaults to its nearest."""
    here, host = this_cpu(store)
    if measured is None:
        if block_measurements(store, here, 1).empty:
            raise UserError(f"measured: no blocks measured on this CPU ({here}); run tunelab blocks measure, "
                            "or give a measurements CSV")
        return here, arch or host, measured_truth(store, here)
    path = Path(measured)
    truth = robust_truth(read_measured(path))
    cpu_id = path.name.split(".")[0]
    if arch is None and cpu_id != here:
        raise UserError(f"arch: the measurements are from CPU {cpu_id}, not this one ({here}); name its "
                        "llvm-mca -mcpu with --arch")
    return cpu_id, arch or host, dict(zip(truth["hex"], truth["cycles"].astype(float)))


def measured_truth(store: Store, cpu_id: str) -> dict[str, float]:
    """Each block's measured cycles per 100 iterations on ``cpu_id``, every pass considered: the median of the passes'
    minima from three passes on, else the noise-gated median or the smallest minimum
    (:func:`engine.surrogates.difftune.noise.robust_truth`)."""
    truth = robust_truth(measurements_table(store, cpu_id))
    if truth.empty:
        raise UserError(f"cpu {cpu_id}: no block measured cleanly; run tunelab blocks measure first")
    return dict(zip(truth["hex"], truth["cycles"].astype(float)))


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


# -- decoded blocks and parameter tables ---------------------------------------------------------------

def decoded_blocks(store: Store, hexes: Sequence[str]) -> dict[str, Block | str]:
    """Each block decoded (or why not), decoding only those the store does not hold for this decoder."""
    cached = {h: block_from_document(h, doc) for h, doc in decoded(store, DECODER, hexes).items()}
    missing = [h for h in dict.fromkeys(hexes) if h not in cached]
    fresh = dict(zip(missing, decode_blocks(missing))) if missing else {}
    save_decoded(store, DECODER, {h: block_document(b) for h, b in fresh.items() if isinstance(b, Block)})
    return {**cached, **fresh}


def table_cache() -> Path:
    """Where default tables built from llvm-mca are cached between runs (per opcode set and mcpu)."""
    return cache_dir() / "difftune-tables"


def check_table_name(name: str) -> str:
    """A name to store a table under: a study's kind of name (typed on command lines, shown in lists, never a path)
    that does not end like the files :func:`table_from` reads, which would hide the stored table."""
    try:
        checked = check_study_name(name)
    except UserError:
        raise UserError(f"name: a table name is 1-100 letters, digits, spaces, '_', '.', '-' or parentheses, "
                        f"got {brief(name)}") from None
    if Path(checked).suffix in TABLE_FILES:
        raise UserError(f"name: {brief(name)} ends in {Path(checked).suffix}, so commands would read it as a file; "
                        "choose another name")
    return checked


def build_table(store: Store, arch: str, name: str | None = None, source: str = "anchor",
                limit: int | None = None) -> tuple[str, ParamTable]:
    """llvm-mca-19's default table for ``arch`` over the opcodes of the anchor blocks (``source="measured"``:
    of this CPU's measured blocks too; at most ``limit`` blocks), stored under ``name`` (default
    ``<arch>-default``)."""
    name = check_table_name(name or f"{arch}-default")
    if source not in ("anchor", "measured"):
        raise UserError(f"source {source!r}: expected anchor or measured")
    hexes = list(bhive.anchor()["hex"])
    if source == "measured":
        hexes += list(block_measurements(store, this_cpu(store)[0], 1)["hex"])
    hexes = hexes[:limit] if limit else hexes
    blocks = [b for b in decoded_blocks(store, hexes).values() if isinstance(b, Block)]
    table = default_table(blocks, arch, table_cache())
    save_param_table(store, name, arch, table.to_document(), {**table.provenance, "blocks": str(len(blocks))})
    return name, table


@dataclass(frozen=True)
class LearnedTable:
    """A table learnt by :func:`learn_table`: its stored name, the blocks and calls it took, its training MAPE."""

    name: str
    table: ParamTable
    cpu_id: str
    blocks: int
    calls: int
    training_mape: float


#: Each parameter decided on at most this many of its holders (data/difftune/README.md: best on both CPUs).
LEARN_SAMPLE = 100


def learn_table(store: Store, name: str, *, measured: str | None = None, arch: str | None = None,
                budget: int | None = None, sample: int = LEARN_SAMPLE, seed: int = 0,
                on_progress: Callable[[int, float], None] | None = None) -> LearnedTable:
    """Learn a table for measured blocks (:func:`measured_source`) as the committed tables were: greedy search from
    llvm-mca-19's default table for ``arch`` with memory forwarding on, on the training part of the blocks
    (:mod:`engine.surrogates.difftune.split`; ``evaluate --held-out`` scores the rest), each parameter decided on
    a fresh draw of at most ``sample`` blocks; ``budget`` simulator calls (default 20 per training block).
    Stored under ``name``."""
    name = check_table_name(name)
    cpu_id, arch, truths = measured_source(store, measured, arch)
    hexes = [h for h in truths if part_of(h) == "train"]
    blocks = [b for b in decoded_blocks(store, hexes).values() if isinstance(b, Block)]
    start = replace(default_table(blocks, arch, table_cache()), memory_forwarding=1)
    blocks = [b for b in blocks if all(i.key in start.rows for i in b.instructions)]
    if not blocks:
        raise UserError(f"measured: no block of the training part decodes with a {arch} row")
    calls = 20 * len(blocks) if budget is None else budget
    found = greedy_search(blocks, np.array([truths[b.hex] for b in blocks], dtype=float), start, calls, seed=seed,
                          sample=sample, on_progress=on_progress)
    table = replace(found.table, provenance={"source": f"tunelab difftune table learn (greedy from {arch} defaults, "
                                             f"drawing {sample})", "truth": f"{cpu_id} (train part of split.py)",
                                             "budget": f"{calls} simulator calls", "seed": str(seed)})
    save_param_table(store, name, arch, table.to_document(), {**table.provenance, "blocks": str(len(blocks))})
    return LearnedTable(name, table, cpu_id, len(blocks), found.calls, float(found.history["mape"].iloc[-1]))


def stored_table(store: Store, name: str) -> ParamTable:
    return from_document(param_table(store, name)["body"])


def table_from(store: Store, source: str) -> ParamTable:
    """A table from a ``.json``/``.parquet``/``.txt`` file, else the stored table of that name."""
    return load_table(source) if Path(source).suffix in TABLE_FILES else stored_table(store, source)


# -- evaluation ----------------------------------------------------------------------------------------

TRUTHS = ("mca", "measured")


@dataclass(frozen=True)
class Evaluation:
    """One evaluation: per-block predictions of every predictor, their accuracy overall and per category."""

    id: int
    arch: str
    truth: str
    cpu_id: str | None
    predictions: pd.DataFrame
    accuracy: pd.DataFrame
    by_category: pd.DataFrame


def evaluate(store: Store, *, truth: str = "mca", arch: str | None = None, limit: int | None = None,
             table: str | None = None, measured: str | None = None, held_out: bool = False) -> Evaluation:
    """Score the simulator (llvm-mca-19's default table for ``arch``, a named table, the simple table) and, with
    measured truth, llvm-mca-19 itself, against ``truth``: llvm-mca-19's cycles for ``arch`` on the anchor
    blocks, or measured cycles (:func:`measured_source`: this CPU's stored blocks or a ``measured`` CSV).
    ``held_out`` keeps only the blocks of the test part (:mod:`engine.surrogates.difftune.split`), which no
    learning run trains or validates on."""
    if truth not in TRUTHS:
        raise UserError(f"truth {truth!r}: expected one of {', '.join(TRUTHS)}")
    if measured is not None and truth != "measured":
        raise UserError(f"measured: {brief(measured)} is a measured truth; give it with --truth measured")
    cpu_id: str | None
    if truth == "measured":
        cpu_id, arch, measured_cycles = measured_source(store, measured, arch)
        truths: dict[str, Any] = dict(measured_cycles)  # None: llvm-mca-19 asked below
    else:
        arch, cpu_id = arch or "haswell", None
        sample = bhive.anchor()
        column = f"{arch}_mca19"
        truths = dict(zip(sample["hex"], sample[column])) if column in sample.columns else dict.fromkeys(sample["hex"])
    hexes = [h for h in truths if not held_out or part_of(h) == "test"]
    hexes = hexes[:limit] if limit else hexes
    blocks = [b for b in decoded_blocks(store, hexes).values() if isinstance(b, Block)]
    if any(truths[b.hex] is None for b in blocks):  # an arch the anchor file lacks: ask llvm-mca-19 now
        truths.update(zip((b.hex for b in blocks), total_cycles(blocks, arch)))
    predictors = {"tunelab (default table)": default_table(blocks, arch, table_cache()),
                  "simple table": simple_table({i.key for b in blocks for i in b.instructions})}
    if table:
        predictors[f"tunelab ({table})"] = table_from(store, table)
    if truth == "measured":  # measured blocks carry the harness's dependencies through memory (ParamTable's field)
        predictors["tunelab (default table, memory forwarding)"] = replace(predictors["tunelab (default table)"],
                                                                           memory_forwarding=1)
    cycles = {name: simulated(blocks, t) for name, t in predictors.items()}
    if truth == "measured":
        cycles["llvm-mca-19"] = total_cycles(blocks, arch)
    kinds = [category(b) for b in blocks]
    predictions = pd.concat([pd.DataFrame({"hex": [b.hex for b in blocks], "predictor": name, "cycles": values,
                                           "truth": [float(truths[b.hex]) for b in blocks], "category": kinds})
                             for name, values in cycles.items()], ignore_index=True)
    overall = accuracy_table(predictions, "predictor")
    by_category = accuracy_table(predictions, ["predictor", "category"])
    summary = {"blocks": len(blocks), "decoded_of": len(hexes), "held_out": held_out, "accuracy": overall.to_dict("records"),
               "by_category": by_category.to_dict("records")}
    evaluation_id = save_evaluation(store, arch=arch, truth=truth, cpu_id=cpu_id, summary=summary,
                                    predictions=predictions.drop(columns="category"))
    return Evaluation(evaluation_id, arch, truth, cpu_id, predictions, overall, by_category)


# -- one block, for the dashboard ----------------------------------------------------------------------

@dataclass(frozen=True)
class BlockView:
    """One block as the Surrogates page shows it: its instructions with the default table's row for each,
    the predictions side by side (llvm-mca-19, the simulator, this CPU's measurement) and the simulator's
    timeline."""

    hex: str
    arch: str
    category: str
    instructions: pd.DataFrame
    predictions: dict[str, float]
    timeline: pd.DataFrame


def blocks_decoded(store: Store) -> bool:
    """Whether the blocks to browse were decoded already (the first :func:`find_blocks` decodes them)."""
    return bool(search_blocks(store, DECODER, "", 1))


def find_blocks(store: Store, text: str, limit: int = 200) -> list[str]:
    """Blocks to pick from: decoded ones whose hex, assembly or opcode names contain ``text`` (the measured and
    anchor blocks are decoded on first use)."""
    if not blocks_decoded(store):
        hexes = list(block_measurements(store, this_cpu(store)[0], 1)["hex"])
        if bhive.available():
            hexes = list(bhive.anchor()["hex"]) + hexes
        decoded_blocks(store, hexes)
    return search_blocks(store, DECODER, text.strip(), limit)


def block_view(store: Store, hex_text: str, arch: str, iterations: int = 3) -> BlockView:
    """Everything the page shows about one block for ``arch``'s default table."""
    block = decoded_blocks(store, [hex_text])[hex_text]
    if isinstance(block, str):
        raise UserError(block)
    table = default_table([block], arch, table_cache())
    rows = [table.rows.get(i.key) for i in block.instructions]
    instructions = pd.DataFrame({"asm": [i.asm for i in block.instructions], "opcode": [i.key for i in block.instructions],
                                 "uops": [r.uops if r else None for r in rows],
                                 "latency": [r.latency if r else None for r in rows],
                                 "ports": [", ".join(f"{n}×{c}" for n, c in r.port_cycles) if r else "" for r in rows]})
    predictions = {"llvm-mca-19": float(total_cycles([block], arch)[0]),
                   "tunelab simulator": float(simulated([block], table)[0])}
    cpu_id, host = this_cpu(store)
    if not block_measurements(store, cpu_id, 1).empty:
        measured = measured_truth(store, cpu_id)
        if hex_text in measured:
            predictions[f"measured on {cpu_id} (-mcpu={host})"] = measured[hex_text]
    shown = timeline(block, table, iterations) if all(r is not None for r in rows) else pd.DataFrame()
    return BlockView(hex_text, arch, category(block), instructions, predictions, shown)


def stored_evaluation(store: Store, evaluation_id: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """A stored evaluation's row (summary parsed) and its per-block predictions."""
    found = evaluations(store)
    found = found[found["id"] == int(evaluation_id)]
    if found.empty:
        raise UserError(f"evaluation {evaluation_id}: not found")
    return found.iloc[0].to_dict(), evaluation_predictions(store, int(evaluation_id))
