"""PF: a learnt cost model as the tuner's pre-filter (Kaufman et al. §5; AutoTVM's and Ansor's practice).

The program's graph and a cost model rank every unmeasured candidate; the ``batch`` best-ranked are measured; the
model is then refined on this program's measurements, so what it got wrong here stops leading it, and the rest
re-ranked. With ``explore`` > 0 each pick is, with that probability, a random unmeasured candidate instead.

Two rankers, so that the GNN can be judged against the cheap one:
* ``gnn``: a trained GNN (``tunelab costmodel train``), refined by ``refit`` gradient passes from its own weights;
* ``gbdt``: gradient-boosted trees fitted here on the graphs of ``train`` (other programs: the program's own graph
  is left out by name), refitted after each round with this program's measurements weighing as much as ``refit``
  training programs together (AutoTVM refits its XGBoost model on a task's measurements the same way).

A candidate is matched to a configuration of the graph file by its factor values: every factor must be one of
the file's configuration feature columns (a study made from the file, ``tunelab costmodel study``, is). A
candidate the file does not hold is ranked after all the others.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from engine.errors import UserError, brief
from engine.space.factors import Space
from engine.strategies.base import Search, Strategy
from engine.strategies.domain import Domain
from engine.strategies.options import Option
from engine.surrogates.costmodel.graph import TensorGraph


class CostModelPrefilter(Strategy):
    name = "PF"
    summary = "a learnt cost model ranks the candidates; measure the best-ranked, refine the model, repeat"
    OPTIONS = (
        Option("ranker", "gnn", "gnn: the trained GNN of 'model'; gbdt: trees fitted here on the graphs of 'train'", "choice",
               choices=("gnn", "gbdt")),
        Option("model", "", "gnn: the cost model file (model.pt of tunelab costmodel train)", "text"),
        Option("train", "", "gbdt: a folder of .npz graphs of other programs to fit the trees on", "text"),
        Option("graph", "", "the program's graph (.npz) whose configurations the candidates are", "text"),
        Option("batch", 1, "candidates measured per round", "int", low=1),
        Option("refit", 10, "after each round: gnn, gradient passes on this program's measurements; gbdt, how many "
               "training programs they weigh as (0: rank once)", "int", low=0),
        Option("explore", 0.0, "chance that a pick is a random unmeasured candidate", "float", low=0.0, high=1.0),
    )

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        super().__init__(domain, budget, seed, direction, **options)
        needed = {"graph": "the program's graph file (.npz)",
                  **({"model": "the cost model file (model.pt of tunelab costmodel train)"} if self.options["ranker"] == "gnn"
                     else {"train": "a folder of graphs of other programs to fit the trees on"})}
        for option, what in needed.items():
            if not self.options[option]:
                raise UserError(f"PF option {option!r}: name {what}")
        from engine.surrogates.costmodel.readers import read_graph

        self.graph = read_graph(self.options["graph"])
        if self.graph.task != "tile":
            raise UserError(f"PF option 'graph' {brief(self.options['graph'])}: a {self.graph.task} graph; "
                            "PF ranks the configurations of a tile graph")
        missing = [n for n in self.domain.names if n not in self.graph.config_feat_names]
        if missing:
            raise UserError(f"PF: factor {missing[0]!r} is not a configuration column of {self.options['graph']} "
                            f"({', '.join(self.graph.config_feat_names)})")
        self.model: _Ranker = _GnnRanker(self.options["model"]) if self.options["ranker"] == "gnn" else \
            _GbdtRanker(self.options["train"], self.graph, int(self.seed or 0))

    def rows_of(self, index: np.ndarray) -> np.ndarray:
        """The graph's configuration row of each candidate (-1 where the file has none)."""
        columns = [self.graph.config_feat_names.index(n) for n in self.domain.names]
        values = np.column_stack([self.domain.level_values(j)[index[:, j]] for j in range(len(self.domain.names))])
        known = self.graph.config_feat[:, columns].astype(float)
        same = np.isclose(values[:, None, :], known[None, :, :]).all(axis=2)
        return np.where(same.any(axis=1), same.argmax(axis=1), -1)

    def _refined(self, rows: np.ndarray, codes: np.ndarray) -> None:
        """Refine the model on the configurations measured so far (at least two, ranked by their loss)."""
        measured, loss = self.measured()
        at = {int(c): i for i, c in enumerate(codes)}
        pairs = [(rows[at[int(c)]], v) for c, v in zip(measured, loss) if int(c) in at and rows[at[int(c)]] >= 0]
        if len(pairs) < 2 or self.options["refit"] == 0:
            return
        runtime = np.full(len(self.graph.runtime), np.nan)
        order = np.argsort([v for _, v in pairs], kind="stable")
        for rank, i in enumerate(order):  # the order is what ranking learns; ranks keep it positive for any objective
            runtime[pairs[i][0]] = 1.0 + rank
        self.model.refine(replace(self.graph, runtime=runtime, normalizer=None, passes=None), self.options["refit"])

    def _search(self) -> Search:
        cand = self.domain.pool(4096, self.rng)
        codes = self.domain.encode(cand)
        rows = self.rows_of(cand)
        while self.used < self.budget:
            tried, _ = self.measured(ok_only=False)
            open_rows = np.flatnonzero(~np.isin(codes, tried))
            if not len(open_rows):
                return
            scores = self.model.scores(self.graph)
            ranked = open_rows[np.lexsort((np.where(rows[open_rows] >= 0, scores[rows[open_rows]], 0.0), rows[open_rows] < 0))]
            picks: list[int] = []
            for _ in range(min(self.options["batch"], len(ranked), self.remaining)):
                rest = [r for r in ranked if r not in picks]
                explore = self.options["explore"] > 0 and self.rng.random() < self.options["explore"]
                picks.append(int(rest[self.rng.integers(len(rest))] if explore else rest[0]))
            self.step += 1
            yield cand[picks]
            self._refined(rows, codes)


class _Ranker(Protocol):
    def scores(self, graph: TensorGraph) -> np.ndarray: ...

    def refine(self, graph: TensorGraph, weight: int) -> None: ...


class _GnnRanker:
    """A trained GNN, refined on the program's measurements by ``weight`` gradient passes."""

    def __init__(self, path: str) -> None:
        from engine.surrogates.costmodel.training import CostModel

        self.model = CostModel.load(path)

    def scores(self, graph: TensorGraph) -> np.ndarray:
        return np.asarray(self.model.predict(graph))

    def refine(self, graph: TensorGraph, weight: int) -> None:
        self.model.refine(graph, weight)


class _GbdtRanker:
    """Trees fitted on the other programs' graphs of a folder, refitted with the program's measured ranks weighing
    as much as ``weight`` of those programs."""

    def __init__(self, folder: str, graph: TensorGraph, seed: int) -> None:
        from engine.surrogates.costmodel.baselines import GBDT
        from engine.surrogates.costmodel.readers import read_folder

        self.training = [g for g in read_folder(folder) if g.program != graph.program and g.task == graph.task]
        if not self.training:
            raise UserError(f"PF option 'train' {brief(folder)}: no {graph.task} graph of another program than {graph.program!r}")
        self.seed = seed
        self.model = GBDT(seed=seed).fit(self.training)

    def scores(self, graph: TensorGraph) -> np.ndarray:
        return np.asarray(self.model.predict(graph))

    def refine(self, graph: TensorGraph, weight: int) -> None:
        from engine.surrogates.costmodel.baselines import GBDT

        self.model = GBDT(seed=self.seed).fit([*self.training, graph], [1.0] * len(self.training) + [float(weight)])
