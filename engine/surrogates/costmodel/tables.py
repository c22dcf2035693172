"""A tile graph's measured configurations as a table study: what Compare and ``tunelab bench`` replay strategies
on (RS, BO, DLMT, and PF, which ranks the same configurations with the cost model).

The factors are the fewest leading configuration columns that tell the runs apart (the generator's tile files:
``batch_size`` alone; the other columns follow from it). Repeated runs of one configuration (real kernels have
them) keep their median; an error run is a ``failed`` row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.errors import UserError
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from engine.surrogates.costmodel.graph import TensorGraph

OBJECTIVE = "runtime_ns"


def identifying_columns(graph: TensorGraph) -> list[str]:
    """The fewest leading varying configuration columns whose values tell the configurations apart."""
    if graph.task != "tile":
        raise UserError(f"graph {graph.name!r}: a {graph.task} graph; a table study needs a tile graph's configurations")
    feat = graph.config_feat
    distinct = len(np.unique(feat, axis=0))
    varying = [j for j in range(feat.shape[1]) if len(np.unique(feat[:, j])) > 1]
    for k in range(1, len(varying) + 1):
        if len(np.unique(feat[:, varying[:k]], axis=0)) == distinct:
            return [graph.config_feat_names[j] for j in varying[:k]]
    raise UserError(f"graph {graph.name!r}: its configurations do not differ")


def _factor(name: str, values: np.ndarray) -> Factor:
    levels = np.unique(values)
    if np.all(levels == np.round(levels)):
        return Factor(name, "integer", tuple(int(v) for v in levels))
    return Factor(name, "ordinal", tuple(float(v) for v in levels))


def graph_table(graph: TensorGraph, name: str) -> tuple[StudySpec, pd.DataFrame]:
    """The study spec (one factor per identifying column, runtime in ns minimised) and its table (factor
    columns, ``value``, ``status``, ``error``)."""
    columns = identifying_columns(graph)
    feat = graph.config_feat[:, [graph.config_feat_names.index(c) for c in columns]].astype(float)
    space = Space([_factor(c, feat[:, j]) for j, c in enumerate(columns)])
    runs = pd.DataFrame(feat, columns=columns).assign(value=np.where(graph.valid, graph.runtime, np.nan))
    table = runs.groupby(columns, sort=True, as_index=False)["value"].median()
    for factor in space.factors:
        table[factor.name] = table[factor.name].astype(type(factor.levels[0]))
    table["status"] = np.where(table["value"].notna(), "ok", "failed")
    table["error"] = pd.Series([None] * len(table), dtype=object).where(table["value"].notna(), "error run")
    spec = StudySpec(name=name, space=space, objective=OBJECTIVE, direction="minimize",
                     runner={"kind": "table", "source": f"cost model graph {graph.name}"},
                     description=f"Measured configurations of {graph.name} ({graph.program}), {len(table)} of them")
    return spec, table
