"""The ask/tell strategy interface and the paper's budget accounting, shared by every strategy.

A strategy is written as a *generator* (:meth:`Strategy._search`) that yields batches of level-index
rows and receives their :class:`Results`; it may also yield an :class:`AwaitDecision` to stop until a
person answers (DLMT's human-in-the-loop steps). The base class turns that into Optuna's shape:

* ``ask(n)`` hands out up to ``n`` configurations still to measure (empty = finished, or waiting for
  ``tell`` or for a decision); ``tell(configs, values, statuses)`` reports them, failures included.
* **Budget** (docs/dlmt.md §4.2): a configuration is charged once, the first time a result for it
  arrives; asking again for a measured one is free (the base answers it from its ledger and never
  hands it out). A configuration outside the space's constraints is answered ``invalid`` without
  being handed out. Results with a status in ``free_statuses`` (default ``invalid``: it never ran)
  are not charged. No more configurations are handed out than the budget left can pay for; when a
  batch cannot be finished within the budget, its remaining rows come back as ``skipped``.
* The best measured configuration, the history and the best-so-far trace are kept here, so every
  strategy reports them the same way.
* **Pending points** (issue 35): a search that picks one configuration at a time from what the ledger holds
  (forest, BO, TPE, local moves) yields a :class:`Pick`. With :attr:`Strategy.parallel` above 1, the base hands
  it out and, while it is measured, lets the search go on as if it had come back at the *constant liar*'s value
  (:data:`LIAR`): the pending configuration counts as measured in :meth:`Strategy.measured` at that value, and
  the search's own Results give it the status :data:`PENDING` (a search may also take the pending codes,
  :meth:`Strategy.pending_codes`, and do better: BO believes its GP there). Its real result replaces the lie in
  the ledger when it is told. At most ``parallel`` configurations are out at once, and never more than the budget left.

Everything inside works on integer codes and numpy arrays; the DataFrame methods are thin wrappers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from engine.errors import UserError
from engine.runners.status import STATUSES
from engine.space.factors import Space
from engine.strategies.domain import Domain
from engine.strategies.options import Option, resolve

#: Status of batch rows that were never measured because the budget ran out.
SKIPPED = "skipped"
#: Status, in a search's Results, of a :class:`Pick` still being measured (the loss is the liar's value).
PENDING = "pending"
#: The constant liar: a pending configuration stands in the ledger at the worst loss measured so far, which sends
#: the picks made beside it elsewhere. Chosen by ``bench/batch_tuning.py --liars min,mean,max`` (AUTO, k = 8, budget
#: 100, five Kernel Tuner caches, 10 runs): the maximum in three of five leave-one-cache-out folds and on all five
#: (mean log slowdown 0.0294 against the mean's 0.0301 and the minimum's 0.0618, which crowds the batch around
#: the pending picks: 1.038 × k = 1); the held-out choice ended at 1.012 [0.996, 1.028] × the sequential runs.
LIAR = "max"
#: Consecutive batches answered entirely from the ledger after which a search is over (it only
#: proposes what it has already measured).
MAX_FREE_BATCHES = 1000


@dataclass(frozen=True)
class Results:
    """Results of one batch, row-aligned with it: ``loss`` is the value to minimise (the objective
    times the direction sign, +inf unless ``ok``)."""

    index: np.ndarray
    loss: np.ndarray
    status: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        ok: np.ndarray = self.status == "ok"
        return ok


@dataclass(frozen=True)
class Pick:
    """Yielded by a search that reads what it has measured from the ledger (:meth:`Strategy.measured`), not from
    the Results it is sent: one configuration (level indices) that may still be measuring when the search goes on
    (pending points, see the module docstring). With ``parallel`` 1 it is a one-row batch."""

    row: np.ndarray


@dataclass(frozen=True)
class AwaitDecision:
    """Yielded by a strategy that needs a person's answer before it can go on."""

    proposal: Any


#: What :meth:`Strategy._search` is: it yields batches (or decisions to wait for) and is sent their
#: :class:`Results` (or the decision's answer).
Search = Generator[np.ndarray | Pick | AwaitDecision, Any, None]


class Strategy:
    """Base of every search strategy; subclasses implement :meth:`_search` and declare ``OPTIONS``,
    whose values (checked, defaults filled) the constructor puts in :attr:`options`."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    free_statuses: frozenset[str] = frozenset({"invalid"})
    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, domain: Domain | Space, budget: int, seed: int | None = None, direction: str = "minimize",
                 **options: Any) -> None:
        if isinstance(domain, Space):
            domain = Domain(domain)
        if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 1:
            raise UserError(f"budget {budget!r} must be a positive integer")
        if direction not in ("minimize", "maximize"):
            raise UserError(f"direction {direction!r} must be 'minimize' or 'maximize'")
        self.options = resolve(self.name, self.OPTIONS, options)
        self.domain = domain
        self.budget = int(budget)
        self.seed = seed
        self.sign = 1.0 if direction == "minimize" else -1.0
        self.rng = np.random.default_rng(seed)
        self.step = 0
        self.used = 0
        self._known: dict[int, tuple[float, str]] = {}
        self._history: list[tuple[int, float, str, bool, int]] = []
        self._trace: list[float] = []
        self.best_loss = math.inf
        self.best_code: int | None = None
        self._answer_code: int | None = None
        self._gen: Search | None = None
        self._batch: dict[str, Any] | None = None
        self._queue: list[int] = []
        self._outstanding: dict[int, list[int]] = {}
        self._waiting: AwaitDecision | None = None
        self._finished = False
        self._free_batches = 0
        #: How many configurations may be measuring at once: the driver sets it to its workers (tuning.tune).
        self.parallel = 1
        self._speculative: dict[int, float] = {}  # pending Picks handed out: code -> the liar's loss

    # -- what subclasses write ---------------------------------------------------------------------
    def _search(self) -> Search:
        raise NotImplementedError

    def measure(self, index: npt.ArrayLike) -> np.ndarray:
        """Shape a batch for ``yield`` (rows of level indices)."""
        return np.asarray(index, dtype=np.int64).reshape(-1, len(self.domain.names))

    def known(self, codes: Sequence[int]) -> np.ndarray:
        """Loss of each code already measured (+inf where failed or unknown; the liar's where pending)."""
        return np.array([self._speculative.get(int(c), self._known.get(int(c), (math.inf, ""))[0]) for c in codes],
                        dtype=float)

    def is_known(self, code: int) -> bool:
        """Whether ``code`` was measured or is being measured (a pending Pick)."""
        return int(code) in self._known or int(code) in self._speculative

    def result_of(self, code: int) -> tuple[float, str] | None:
        """The loss and status measured for ``code``; None while it is pending or was never measured."""
        return self._known.get(int(code))

    def is_charged(self, code: int) -> bool:
        """Whether ``code`` was measured and paid for (a free result, e.g. ``invalid``, was not)."""
        entry = self._known.get(int(code))
        return entry is not None and entry[1] not in self.free_statuses

    def measured(self, ok_only: bool = True, pending: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Codes and losses of every distinct configuration measured so far (ok ones by default), pending Picks
        among them at the liar's value (with ``ok_only``, only once the liar has a finite value to stand at; without
        ``pending``, left out: a comparison a lie would decide)."""
        items = [(c, v[0]) for c, v in self._known.items() if not ok_only or v[1] == "ok"]
        if pending:
            items += [(c, v) for c, v in self._speculative.items() if not ok_only or math.isfinite(v)]
        if not items:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        codes, loss = zip(*items)
        return np.array(codes, dtype=np.int64), np.array(loss, dtype=float)

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    def pending_codes(self) -> np.ndarray:
        """Codes of the Picks handed out while others were measured, not told yet (they stand at the liar)."""
        return np.fromiter(self._speculative, dtype=np.int64, count=len(self._speculative))

    @property
    def in_flight(self) -> int:
        """Configurations handed out and not yet told."""
        return len(self._outstanding) + len(self._speculative)

    def charge(self, count: int) -> None:
        """Charge ``count`` more measurements (capped by the budget left) for configurations the
        ledger answered for free: for a strategy that reproduces a counter which paid for them
        again (the paper's GS). Each keeps its place in the best-so-far trace."""
        count = max(0, min(int(count), self.budget - self.used))
        self.used += count
        self._trace += [self.best_loss] * count

    # -- ask / tell ----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def pending_decision(self) -> Any:
        """What the strategy waits for a person to answer (None when it is not waiting)."""
        return None if self._waiting is None else self._waiting.proposal

    def ask_index(self, n: int | None = None) -> np.ndarray:
        """Up to ``n`` configurations (level-index rows) to measure now; all available when None."""
        limit = math.inf if n is None else int(n)
        out: list[int] = []
        while len(out) < limit:
            if self._batch is None:
                if self._finished or self._waiting is not None:
                    break
                if self.used >= self.budget:
                    self._finished = True
                    break
                self._advance(None)
                continue
            room = self.budget - self.used - self.in_flight
            while self._queue and room > 0 and len(out) < limit:
                code = self._queue.pop(0)
                self._outstanding[code] = self._batch["pending"].pop(code)
                out.append(code)
                room -= 1
            if self._queue and room <= 0 and not self.in_flight:
                self._skip_rest()
            if not self._queue and not self._outstanding:
                self._complete()
                continue
            if not self._queue and self._batch["pick"] and self.in_flight < min(self.parallel, self.budget - self.used):
                self._speculate()
                continue
            break
        return self.domain.decode(np.array(out, dtype=np.int64))

    def tell_index(self, index: np.ndarray, values: Sequence[float | None] | np.ndarray,
                   statuses: Sequence[str] | np.ndarray | None = None) -> None:
        """Report results of configurations (normally ones just asked)."""
        index = np.asarray(index, dtype=np.int64).reshape(-1, len(self.domain.names))
        numbers = [math.nan if v is None else float(v) for v in values]
        statuses = ["ok"] * len(index) if statuses is None else list(statuses)
        if not (len(numbers) == len(statuses) == len(index)):
            raise UserError(f"tell: {len(index)} configurations, {len(numbers)} values and {len(statuses)} statuses")
        for code, value, status in zip(self.domain.encode(index).tolist(), numbers, statuses):
            self._speculative.pop(code, None)
            loss, status = self._record(code, value, status)
            positions = self._outstanding.pop(code, None)
            if positions is None and self._batch is not None and code in self._batch["pending"]:
                self._queue.remove(code)
                positions = self._batch["pending"].pop(code)
            if positions is not None:
                assert self._batch is not None  # an outstanding code is a row of the current batch
                self._batch["loss"][positions] = loss
                self._batch["status"][positions] = status
        if self._batch is not None and not self.in_flight and self._queue and self.used >= self.budget:
            self._skip_rest()
        if self._batch is not None and not self._queue and not self._outstanding:
            self._complete()

    def resolve(self, answer: Any) -> None:
        """Answer the pending decision; the strategy goes on with it."""
        if self._waiting is None:
            raise UserError(f"{self.name}: no decision is pending")
        self._waiting = None
        self._advance(answer)

    def ask(self, n: int | None = None) -> pd.DataFrame:
        return self.domain.frame(self.ask_index(n))

    def tell(self, configs: pd.DataFrame | Sequence[Mapping[str, Any]], values: Sequence[float | None],
             statuses: Sequence[str] | None = None) -> None:
        frame = configs if isinstance(configs, pd.DataFrame) else pd.DataFrame(list(configs))
        self.tell_index(self.domain.from_frame(frame), values, statuses)

    # -- results ---------------------------------------------------------------------------------------
    @property
    def best_value(self) -> float | None:
        return None if self.best_code is None else self.sign * self.best_loss

    @property
    def best_index(self) -> np.ndarray | None:
        return None if self.best_code is None else self.domain.decode(np.array([self.best_code]))[0]

    @property
    def answer_code(self) -> int | None:
        """The configuration the strategy returns: its best measurement unless it says otherwise
        (a paper baseline may return a model's prediction or its final subspace's best)."""
        return self.best_code if self._answer_code is None else self._answer_code

    @property
    def answer_value(self) -> float | None:
        code = self.answer_code
        if code is None or code not in self._known or self._known[code][1] != "ok":
            return None
        return self.sign * self._known[code][0]

    @property
    def answer(self) -> dict[str, Any] | None:
        """The returned configuration and its measured value (None when it has none)."""
        code = self.answer_code
        if code is None:
            return None
        config = self.domain.frame(self.domain.decode(np.array([code]))).iloc[0].to_dict()
        return {"config": {k: v.item() if isinstance(v, np.generic) else v for k, v in config.items()},
                "value": self.answer_value}

    @property
    def best(self) -> dict[str, Any] | None:
        """The best configuration measured so far and its value (None before any success)."""
        if self.best_code is None:
            return None
        config = self.domain.frame(self.domain.decode(np.array([self.best_code]))).iloc[0].to_dict()
        return {"config": {k: v.item() if isinstance(v, np.generic) else v for k, v in config.items()}, "value": self.best_value}

    def trace(self) -> np.ndarray:
        """Best value (objective units) after each charged measurement; NaN before the first success."""
        loss = np.array(self._trace, dtype=float)
        return np.where(np.isfinite(loss), self.sign * loss, np.nan)

    def history(self) -> pd.DataFrame:
        """Every result told, in order: configuration, value, status, whether it was charged, step."""
        if not self._history:
            return pd.DataFrame(columns=[*self.domain.names, "value", "status", "charged", "step"])
        codes, values, statuses, charged, steps = zip(*self._history)
        frame = self.domain.frame(self.domain.decode(np.array(codes, dtype=np.int64)))
        frame["value"], frame["status"], frame["charged"], frame["step"] = values, statuses, charged, steps
        return frame

    # -- internals -------------------------------------------------------------------------------------
    def _record(self, code: int, value: float, status: str) -> tuple[float, str]:
        if status not in STATUSES:
            raise UserError(f"tell: status {status!r} is not one of {', '.join(STATUSES)}")
        if status == "ok" and not math.isfinite(value):
            status = "failed"
        loss = self.sign * value if status == "ok" else math.inf
        first = code not in self._known
        if first:
            self._known[code] = (loss, status)
        charged = first and status not in self.free_statuses
        self._history.append((code, value, status, charged, self.step))
        if status == "ok" and loss < self.best_loss:
            self.best_loss, self.best_code = loss, code
        if charged:
            self.used += 1
            self._trace.append(self.best_loss)
        return loss, status

    def _advance(self, answer: Any) -> None:
        """Run the generator to its next request."""
        try:
            if self._gen is None:
                self._gen = self._search()
                item = next(self._gen)
            else:
                item = self._gen.send(answer)
        except StopIteration:
            self._finished = True
            return
        if isinstance(item, AwaitDecision):
            self._waiting = item
            return
        if isinstance(item, Pick):
            self._start(np.asarray(item.row, dtype=np.int64).reshape(1, len(self.domain.names)), pick=True)
        else:
            self._start(np.asarray(item, dtype=np.int64).reshape(-1, len(self.domain.names)))

    def _start(self, index: np.ndarray, pick: bool = False) -> None:
        feasible = self.domain.feasible(index)
        codes = self.domain.encode(np.where(feasible[:, None], index, 0)).tolist()
        loss = np.full(len(index), math.inf)
        status = np.empty(len(index), dtype=object)
        pending: dict[int, list[int]] = {}
        for i, code in enumerate(codes):
            if not feasible[i]:
                status[i] = "invalid"
            elif code in self._known:
                loss[i], status[i] = self._known[code]
            elif code in self._speculative or code in self._outstanding:  # measuring: wait for it, not hand it out
                self._speculative.pop(code, None)
                self._outstanding.setdefault(code, []).append(i)
            elif code in pending:
                pending[code].append(i)
            else:
                pending[code] = [i]
        if pending and self.used >= self.budget:
            self._finished = True  # nothing more can be paid for: the search ends here
            return
        self._batch = {"index": index, "loss": loss, "status": status, "pending": pending, "pick": pick}
        self._queue = list(pending)
        self._free_batches = 0 if pending else self._free_batches + 1
        if self._free_batches > MAX_FREE_BATCHES:
            self._batch, self._queue, self._finished = None, [], True

    def _speculate(self) -> None:
        """Complete the open Pick while it is measured: the search is told it is pending at the liar's value."""
        assert self._batch is not None  # called only while a Pick is out
        real = np.array([loss for loss, status in self._known.values() if status == "ok"])
        liar = math.inf if not len(real) else float(real.min() if LIAR == "min" else real.max() if LIAR == "max"
                                                    else real.mean())
        for code, positions in self._outstanding.items():
            self._speculative[code] = liar
            self._batch["loss"][positions] = liar
            self._batch["status"][positions] = PENDING
        self._outstanding = {}
        self._complete()

    def _skip_rest(self) -> None:
        assert self._batch is not None  # called only while a batch is open
        for code in self._queue:
            self._batch["status"][self._batch["pending"].pop(code)] = SKIPPED
        self._queue = []

    def _complete(self) -> None:
        batch, self._batch = self._batch, None
        assert batch is not None  # called only while a batch is open
        self._advance(Results(batch["index"], batch["loss"], batch["status"]))


Evaluate = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def drive(strategy: Strategy, evaluate: Evaluate, batch: int | None = None,
          until: Callable[[Strategy], bool] | None = None) -> Strategy:
    """Run ``strategy`` to the end against ``evaluate(index) -> (values, statuses)`` (auto mode:
    a strategy that waits for a decision stops there); ``batch`` caps how many configurations are asked at once;
    ``until(strategy)``, asked after each answer, ends the run early when true."""
    while not strategy.finished:
        index = strategy.ask_index(batch)
        if not len(index):
            break
        values, statuses = evaluate(index)
        strategy.tell_index(index, values, statuses)
        if until is not None and until(strategy):
            break
    return strategy
