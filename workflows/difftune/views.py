"""What the Surrogates page's DiffTune learning section shows, read from the store in the shape it shows it: the
simulated data sets, the trained surrogates with their sizes, one stored experiment with its test predictions,
and a learnt table beside the table it is compared with (its start, or the data set's defaults).

The page calls one of these per view, so it never joins storage and the engine itself.
"""

from __future__ import annotations

import re
from importlib.util import find_spec
from typing import Any

import pandas as pd

from engine.errors import UserError, brief
from engine.surrogates.difftune.params import ParamTable, from_document
from storage import Store
from storage.difftune.datasets import dataset, datasets
from storage.difftune.experiments import experiments, surrogates
from workflows.difftune import stored_evaluation, stored_table
from workflows.difftune.dataset import stored_job

#: The llvm-mca ``-mcpu`` models the page offers (the anchor CSV has llvm-mca-19's cycles for the first three).
MODEL_ARCHS = ("haswell", "skylake", "ivybridge", "znver3", "znver4", "znver5", "sapphirerapids", "icelake-server")
#: What a learnt table is compared with: the table its method started from, or the data set's defaults (the
#: truth of a recovery experiment).
REFERENCES = ("start", "defaults")
#: The network sizes of a surrogate's training configuration, as its table shows them.
_SIZES = ["embedding", "hidden", "layers", "batch"]
#: A method's start, as the experiment names it: "DiffTune (random start)", "greedy (defaults start)".
_START = re.compile(r"\((\w+) start\)$")


def learning_unavailable() -> str | None:
    """Why the surrogate cannot be trained or used here (an environment installed without PyTorch), or None."""
    if find_spec("torch") is None:
        return ("DiffTune's surrogate needs PyTorch, which this environment lacks: `make run` or `make test` "
                "installs it (the CPU build).")
    return None


def dataset_overview(store: Store) -> pd.DataFrame:
    """The data sets, oldest first: name, arch, blocks, samples done and wanted, last update."""
    frame = datasets(store)
    return frame.rename(columns={"n_blocks": "blocks"})[["name", "arch", "blocks", "samples_done", "samples_wanted",
                                                          "updated_at"]]


def surrogate_overview(store: Store) -> pd.DataFrame:
    """The trained surrogates, oldest first: name, data set, network sizes and whether a throughput bound is under
    its prediction (from the training configuration; surrogates from before the bound have none), epochs,
    validation and test MAPE and training minutes."""
    frame = surrogates(store)
    sizes = pd.DataFrame([{**{k: c.get(k) for k in _SIZES}, "bound": bool(c.get("bound", False))} for c in frame["config"]],
                         index=frame.index, columns=[*_SIZES, "bound"])
    return pd.concat([frame[["name", "dataset"]], sizes, frame[["epochs_done", "val_mape", "test_mape"]],
                      (frame["seconds"] / 60).rename("minutes")], axis=1)


def experiment_results(store: Store, experiment_id: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """A stored experiment's row (``summary`` parsed) and its per-block test predictions of every method."""
    found = experiments(store)
    found = found[found["id"] == int(experiment_id)]
    if found.empty:
        raise UserError(f"experiment: none with id {brief(experiment_id)}")
    row = found.iloc[0].to_dict()
    return row, stored_evaluation(store, int(row["evaluation_id"]))[1]


def compared_tables(store: Store, experiment: dict[str, Any], method: str, reference: str) -> tuple[ParamTable, ParamTable, str]:
    """(learnt table of ``method``, the table it is compared with, that table's name in words).

    ``reference`` "start" is the method's start: the data set's defaults, or DiffTune's random start rebuilt from
    the experiment's seed exactly as the experiment drew it; "defaults" is the data set's defaults whatever the start.
    """
    if reference not in REFERENCES:
        raise UserError(f"reference: expected one of {', '.join(REFERENCES)}, got {brief(reference)}")
    summary = experiment["summary"]
    if method not in summary["tables"]:
        raise UserError(f"method: experiment {experiment['id']} learnt no table with {brief(method)}")
    data = dataset(store, summary["settings"]["dataset"])
    if data is None:
        raise UserError(f"dataset: {brief(summary['settings']['dataset'])} is no longer in this database")
    defaults = from_document(data["model"])
    learned = stored_table(store, summary["tables"][method])
    start = _START.search(method)
    label = f"the data set's defaults ({defaults.provenance.get('mcpu', data['arch'])})"
    if reference == "start" and start is not None and start.group(1) == "random":
        from engine.surrogates.difftune.learn import random_start  # torch: only once a surrogate exists

        seed = int(summary["settings"].get("seed", 0))
        return learned, random_start(stored_job(store, data).blocks, defaults, seed), f"its random start (seed {seed})"
    return learned, defaults, label
