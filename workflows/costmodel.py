"""The tensor-program cost model as use cases: load a data set, cross-validate models side by side and keep the
result, train one model on a whole data set and keep its checkpoint beside the database."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from engine.errors import UserError, brief
from engine.io.paths import REPO_ROOT
from engine.study import check_study_name
from engine.surrogates.costmodel.evaluate import CrossValidation, cross_validate, fit_model, make_model
from engine.surrogates.costmodel.graph import TensorGraph
from engine.surrogates.costmodel.readers import read_folder, read_graph, real_tpu_layout, real_tpu_tiles, schema_note
from engine.surrogates.costmodel.tables import graph_table
from engine.surrogates.difftune.measure import cpu_identity
from storage import Store
from storage.costmodel import evaluation_predictions, evaluations, model, models, save_evaluation, save_model
from workflows.difftune.dataset import check_name

#: Data sets known by name; anything else is a folder of ``.npz`` graphs.
DATA_SETS = {"tpu-tiles": "the 15 real TPU v3 kernels of the data folder (tile task, 754 runs)",
             "tpu-layout": "the real TPU v3 layout module of the data folder (122 configurations of one program)",
             "cpu-tile": "programs generated and timed on this project's CPU with JAX (data/costmodel/tile: lax.map chunk sizes)",
             "cpu-joint": "programs generated and timed on this project's CPU with JAX (data/costmodel/joint: chunk size × split)",
             "cpu-large": "programs generated and timed on this project's CPU with JAX (data/costmodel/large: chunk size × split × "
                          "YNN fusions, 228 configurations a program)",
             "cpu-absolute": "programs generated and timed on this project's CPU with JAX (data/costmodel/absolute: runtimes)"}
#: The generated data sets committed with the repository (data/costmodel/README.md).
GENERATED = {name: REPO_ROOT / "data" / "costmodel" / name.removeprefix("cpu-") for name in ("cpu-tile", "cpu-joint", "cpu-large", "cpu-absolute")}


def load_graphs(data: str) -> list[TensorGraph]:
    """A named data set or a folder of ``.npz`` graphs (one task)."""
    if data == "tpu-tiles":
        return real_tpu_tiles()
    if data == "tpu-layout":
        return [real_tpu_layout()]
    if data in GENERATED:
        return read_folder(GENERATED[data])
    if not Path(data).is_dir():
        raise UserError(f"data: {brief(data)} is neither a folder of .npz graphs nor one of {', '.join(DATA_SETS)}")
    return read_folder(data)


def data_notes(graphs: Sequence[TensorGraph]) -> list[str]:
    """What a user should know about the data before reading figures made on it (unnamed, foreign columns)."""
    return [note for note in (schema_note(graphs),) if note]


@dataclass(frozen=True)
class Evaluated:
    id: int
    result: CrossValidation
    seconds: float
    notes: list[str]


def evaluate(store: Store, data: str, models_: Sequence[str], *, folds: int = 5, seeds: Sequence[int] = (0, 1, 2),
             params: Mapping[str, Mapping[str, Any]] | None = None, name: str | None = None,
             progress: Callable[[str], None] | None = None) -> Evaluated:
    """Cross-validate ``models_`` on the same program-grouped folds and store scores and predictions."""
    started = time.monotonic()
    graphs = load_graphs(data)
    result = cross_validate(graphs, models_, folds=folds, seeds=seeds, params=params, progress=progress)
    identity = cpu_identity()
    notes = data_notes(graphs)
    summary = {"models": result.table.to_dict("records"), "seconds": result.seconds, "noise": result.noise, "notes": notes,
               "protocol": result.protocol,
               "folds": folds, "seeds": list(seeds), "params": {k: dict(v) for k, v in (params or {}).items()},
               "graphs": len(graphs), "programs": len({g.program for g in graphs}),
               "scores": result.scores.to_dict("records"), "cpu": identity.model_name, "cpu_id": identity.short_id}
    label = name or f"{data} {time.strftime('%Y-%m-%d %H:%M')}"
    evaluation_id = save_evaluation(store, name=label, data=data, task=graphs[0].task, summary=summary,
                                    predictions=result.predictions)
    return Evaluated(evaluation_id, result, time.monotonic() - started, notes)


def stored_evaluations(store: Store) -> pd.DataFrame:
    return evaluations(store)


def evaluation_results(store: Store, evaluation_id: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """One evaluation's row and its per-configuration predictions."""
    listed = evaluations(store)
    rows = listed[listed["id"] == int(evaluation_id)]
    if rows.empty:
        raise UserError(f"evaluation: no evaluation {brief(evaluation_id)} in this database")
    return rows.iloc[0].to_dict(), evaluation_predictions(store, int(evaluation_id))


@dataclass(frozen=True)
class Trained:
    name: str
    folder: Path
    seconds: float
    graphs: int
    notes: list[str]


def train(store: Store, data: str, name: str, *, kind: str = "gnn", params: Mapping[str, Any] | None = None,
          seed: int = 0, on_epoch: Callable[[int, float, float], None] | None = None) -> Trained:
    """Train one model on every graph of ``data`` (the GNN keeps ~10% of programs to stop early) and store it;
    the GNN's checkpoint goes to ``<db>.costmodels/<name>/model.pt``."""
    check_name(name)
    if model(store, name) is not None:
        raise UserError(f"name: a cost model {brief(name)} exists already")
    if kind != "gnn":
        raise UserError(f"kind: only the gnn is trained and kept (baselines retrain in seconds), got {brief(kind)}")
    graphs = load_graphs(data)
    started = time.process_time()
    fitted = fit_model(kind, make_model(kind, seed, params), graphs, seed, on_epoch)
    seconds = time.process_time() - started
    folder = Path(f"{store.path}.costmodels") / name
    folder.mkdir(parents=True, exist_ok=True)
    fitted.save(folder / "model.pt")
    relative = folder.relative_to(Path(store.path).parent) if folder.is_relative_to(Path(store.path).parent) else folder
    save_model(store, name=name, data=data, task=graphs[0].task, params=fitted.get_params(), folder=str(relative),
               seconds=seconds, summary={"graphs": len(graphs), "cpu": cpu_identity().model_name})
    return Trained(name, folder, seconds, len(graphs), data_notes(graphs))


def trained_models(store: Store) -> pd.DataFrame:
    return models(store)


@dataclass(frozen=True)
class GraphStudy:
    name: str
    graph: str
    factors: list[str]
    configurations: int
    best: float


def graph_study(store: Store, graph_file: str, name: str) -> GraphStudy:
    """A tile graph file's measured configurations as a table study: Compare and ``tunelab bench`` replay RS, BO,
    DLMT on it, and PF with the cost model and this file as its options."""
    if check_study_name(name) in store.study_names():
        raise UserError(f"name: study {brief(name)} already exists; pick another name or delete it first")
    path = Path(graph_file).expanduser().resolve()
    spec, table = graph_table(read_graph(path), name)
    spec = replace(spec, runner={**spec.runner, "graph": str(path)})
    store.create_study(spec, table)
    return GraphStudy(name, str(path), list(spec.space.names), len(table), float(table["value"].min()))


def model_file(store: Store, name: str) -> Path:
    """The checkpoint of a stored cost model (what PF's ``model`` option names)."""
    row = model(store, name)
    if row is None:
        raise UserError(f"model: no cost model named {brief(name)} (tunelab costmodel train makes one)")
    folder = Path(row["folder"])
    return (folder if folder.is_absolute() else Path(store.path).parent / folder) / "model.pt"
