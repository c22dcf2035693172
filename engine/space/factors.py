"""Search spaces: factors with discrete levels, constraints over them, and the valid configurations.

A performance knob is nearly always discrete (tile sizes, unroll factors, flags), so every factor is a
finite, ordered list of levels. That makes three encodings available everywhere: the raw values (what
models are fitted on, as in R), level indices 0..L-1 (what neighbourhoods and Latin hypercubes move
over) and coded values in [-1, 1] (what screening designs use).

Constraints are checked expressions (:mod:`engine.space.expr`) evaluated over whole columns at once, so
enumerating two million configurations is a handful of numpy passes, not a Python loop per row. numpy is
imported by the methods that build arrays, not by defining a space: reading a stored one to list it is pure Python.
"""

from __future__ import annotations

import keyword
import math
import numbers
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, brief
from engine.io.jsonable import numpy_types, plain
from engine.space.expr import CONSTRAINT_FUNCTIONS, FORMULA_FUNCTIONS, Expression, ExpressionError

if TYPE_CHECKING:  # numpy and pandas at run time only where arrays and frames are built (see the docstring)
    import numpy as np
    import pandas as pd

KINDS = ("ordinal", "integer", "categorical", "boolean")
#: Largest factorial product that :meth:`Space.enumerate` will materialise.
MAX_ENUMERATE = 2_000_000
#: Most levels one factor may have, however they are written (a list, a range, powers of two).
MAX_LEVELS = 100_000
#: Longest factor name: names appear in messages, column headers and exported macro names.
MAX_NAME = 100
#: Names an expression or formula reads as something else: Python keywords (``lambda``, ``True``)
#: and the whitelisted functions (``min``, ``log``, ``I``, the ``np`` of ``np.log``).
RESERVED_NAMES = frozenset(keyword.kwlist) | frozenset(CONSTRAINT_FUNCTIONS) | {
    f.split(".")[0] for f in FORMULA_FUNCTIONS
}
#: Integer levels are stored as int64.
_INT64 = 2**63
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_TRUE_WORDS = {"true", "yes", "on", "1"}
_FALSE_WORDS = {"false", "no", "off", "0"}


def check_factor_name(name: Any) -> str:
    """A factor name must work as a column, in constraints and in formulas, and read the same in each."""
    if not isinstance(name, str) or not name.isidentifier():
        raise UserError(f"factor name {brief(name)} must be an identifier (letters, digits, _)")
    if len(name) > MAX_NAME:
        raise UserError(f"factor name {brief(name)} is longer than {MAX_NAME} characters")
    if name in RESERVED_NAMES:
        raise UserError(f"factor name '{name}' is reserved in expressions (a Python keyword or function); rename it")
    normal = unicodedata.normalize("NFKC", name)  # how Python reads the identifier in an expression
    if normal != name:
        raise UserError(f"factor name {name!r} reads as {normal!r} in expressions; use that")
    return name


def check_level_count(name: str, count: int, written: str) -> None:
    """One limit on levels however they are written, checked before any level is built."""
    if count > MAX_LEVELS:
        raise UserError(f"factor {brief(name)}: {written} has more than {MAX_LEVELS:,} levels")


def _in_int64(value: int | float, name: str) -> int:
    """``value`` as an int64 level; refused by name when it is outside that range."""
    if not -_INT64 <= value < _INT64:
        raise UserError(f"factor '{name}': level {brief(value)} is outside the 64-bit integer range")
    return int(value)


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, (bool, *numpy_types("bool_"))):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):  # numpy's integers too
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS | _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    raise UserError(f"factor '{name}': level {brief(value)} is not a boolean")


def _as_number(value: Any, name: str) -> float | int:
    if isinstance(value, (bool, *numpy_types("bool_"))):
        raise UserError(f"factor '{name}': level {brief(value)} is not numeric")
    if isinstance(value, numbers.Integral):
        return _in_int64(int(value), name)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):  # exactly, not via a float that rounds 2**53 + 1
        if len(value.strip().lstrip("+-").lstrip("0")) > 19:  # before int() meets 5,000 digits
            raise UserError(f"factor '{name}': level {brief(value)} is outside the 64-bit integer range")
        return _in_int64(int(value), name)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"factor '{name}': level {brief(value)} is not numeric") from None
    if not math.isfinite(number):
        raise UserError(f"factor '{name}': level {brief(value)} is not a finite number")
    return _in_int64(number, name) if number.is_integer() and not isinstance(value, float) else number


def first_duplicate(values: Sequence[Any]) -> Any:
    """The first value seen twice (None when all differ), for a message naming it."""
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


@dataclass(frozen=True)
class Factor:
    """One knob: a name, a kind and its levels (sorted for numeric kinds, as given for categorical)."""

    name: str
    kind: str
    levels: tuple[Any, ...]

    def __post_init__(self) -> None:
        check_factor_name(self.name)
        if self.kind not in KINDS:
            raise UserError(f"factor '{self.name}': kind {brief(self.kind)} is not one of {', '.join(KINDS)}")
        levels = list(self.levels) if self.levels is not None else []
        if self.kind == "boolean" and not levels:
            levels = [False, True]
        if not levels:
            raise UserError(f"factor '{self.name}': empty level list")
        check_level_count(self.name, len(levels), f"the list of {len(levels):,} levels")
        level_types = (str, bool, int, float, *numpy_types("generic"))
        odd = next((v for v in levels if not isinstance(v, level_types)), None)
        if odd is not None or None in levels:  # str() would turn [1, 2] or None into a level silently
            raise UserError(f"factor '{self.name}': level {brief(odd)} is not a number, text or boolean")
        clean: Sequence[bool | int | float | str]
        if self.kind == "boolean":
            clean = sorted({_as_bool(v, self.name) for v in levels})
        elif self.kind == "categorical":
            clean = [str(v) for v in levels]
            if len(set(clean)) != len(clean):
                raise UserError(f"factor '{self.name}': level {brief(first_duplicate(clean))} appears twice")
        else:
            numbers = [_as_number(v, self.name) for v in levels]
            if self.kind == "integer" and any(float(v) != int(v) for v in numbers):
                bad = next(v for v in numbers if float(v) != int(v))
                raise UserError(f"factor '{self.name}': level {brief(bad)} is not an integer")
            if self.kind == "integer":
                numbers = [_in_int64(v, self.name) for v in numbers]
            if len(set(numbers)) != len(numbers):
                raise UserError(f"factor '{self.name}': level {brief(first_duplicate(numbers))} appears twice")
            clean = sorted(numbers)
        object.__setattr__(self, "levels", tuple(clean))

    @classmethod
    def integer_range(cls, name: str, low: int, high: int, step: int = 1) -> Factor:
        return cls(name, "integer", tuple(level_range(name, low, high, step)))

    @property
    def numeric(self) -> bool:
        return self.kind in ("ordinal", "integer")

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def floating(self) -> bool:
        """Whether the factor's values are floats: it is numeric and a level is one (then ``1`` reads ``1.0``)."""
        return self.numeric and any(isinstance(v, float) for v in self.levels)

    def level_array(self) -> np.ndarray:
        """The levels as a numpy array of the factor's natural dtype."""
        import numpy as np

        if self.kind == "boolean":
            return np.array(self.levels, dtype=bool)
        if self.kind == "categorical":
            return np.array(self.levels, dtype=object)
        return np.array(self.levels, dtype=float if self.floating else np.int64)

    def index_of(self, values: Sequence[Any]) -> np.ndarray:
        """Level index of each value; -1 where a value is not a level."""
        import numpy as np

        lookup = {self._key(v): i for i, v in enumerate(self.levels)}
        # A table column repeats a few values thousands of times: each distinct (type, value) is keyed once.
        # The type is part of the memo's key because 1, 1.0 and True are one dict key but not one level text.
        memo: dict[tuple[type, Any], int] = {}
        out = np.empty(len(values), dtype=np.int64)
        for n, value in enumerate(values):
            try:
                out[n] = memo[(value.__class__, value)]
            except KeyError:
                out[n] = memo[(value.__class__, value)] = lookup.get(self._key(value), -1)
            except TypeError:  # unhashable: never a level's key, but keyed as the others are
                out[n] = lookup.get(self._key(value), -1)
        return out

    def _key(self, value: Any) -> bool | str | float | None:
        if self.kind == "boolean":
            try:
                return _as_bool(value, self.name)
            except UserError:
                return None
        if self.kind == "categorical":
            return str(value)
        try:
            return float(value)
        except (TypeError, ValueError):
            return None

    def to_dict(self) -> dict[str, Any]:
        levels = [plain(v) for v in self.levels]
        return {"name": self.name, "kind": self.kind, "levels": levels}


@dataclass(frozen=True)
class Space:
    """Factors plus constraints; the valid configurations are those that satisfy every constraint."""

    factors: tuple[Factor, ...]
    constraints: tuple[str, ...] = ()
    _compiled: tuple[Expression, ...] = field(default=(), repr=False, compare=False)

    def __init__(self, factors: Iterable[Factor], constraints: Iterable[str] = ()) -> None:
        factors = tuple(factors)
        if not factors:
            raise UserError("space: no factors")
        seen: set[str] = set()
        for f in factors:
            if f.name in seen:
                raise UserError(f"space: duplicate factor name '{f.name}'")
            seen.add(f.name)
        constraints = tuple(c.strip() for c in constraints if c and c.strip())
        compiled = []
        for text in constraints:
            try:
                compiled.append(Expression.compile(text, seen, what="constraint"))
            except ExpressionError as exc:
                raise UserError(str(exc)) from None
        object.__setattr__(self, "factors", factors)
        object.__setattr__(self, "constraints", constraints)
        object.__setattr__(self, "_compiled", tuple(compiled))

    # -- description -------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [f.name for f in self.factors]

    def factor(self, name: str) -> Factor:
        for f in self.factors:
            if f.name == name:
                return f
        raise UserError(f"space: unknown factor {brief(name)}")

    @property
    def size(self) -> int:
        """Number of configurations before constraints (the full factorial)."""
        return math.prod(f.n_levels for f in self.factors)

    @property
    def enumerable(self) -> bool:
        return self.size <= MAX_ENUMERATE

    def to_dict(self) -> dict[str, Any]:
        return {"factors": [f.to_dict() for f in self.factors], "constraints": list(self.constraints)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Space:
        if not isinstance(data, Mapping) or "factors" not in data:
            raise UserError("space: missing 'factors'")
        items, constraints = data["factors"] or [], data.get("constraints") or []
        if not isinstance(items, (list, tuple)):
            raise UserError(f"space: 'factors' must be a list, got {brief(items)}")
        factors = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or "name" not in item:
                raise UserError(f"space: factor #{i + 1} has no 'name'")
            factors.append(_factor_from_dict(item))
        if isinstance(constraints, str):
            constraints = [constraints]
        if not isinstance(constraints, (list, tuple)) or not all(isinstance(c, str) for c in constraints):
            raise UserError(f"space: 'constraints' must be a list of strings, got {brief(constraints)}")
        return cls(factors, constraints)

    def fix(self, assignments: Mapping[str, Any]) -> Space:
        """The sub-space with some factors held at one level (a DLMT step after a decision)."""
        factors = []
        for f in self.factors:
            if f.name in assignments:
                value = assignments[f.name]
                if f.index_of([value])[0] < 0:
                    raise UserError(f"factor '{f.name}': value {brief(value)} is not one of its levels")
                factors.append(Factor(f.name, f.kind, (f.levels[f.index_of([value])[0]],)))
            else:
                factors.append(f)
        unknown = set(assignments) - set(self.names)
        if unknown:
            raise UserError(f"space: unknown factor {brief(sorted(unknown, key=str)[0])}")
        return Space(factors, self.constraints)

    # -- validity ------------------------------------------------------------------------------
    def _columns(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        import numpy as np

        cols = {}
        for f in self.factors:
            if f.name not in frame.columns:
                raise UserError(f"configuration is missing factor '{f.name}'")
            values = frame[f.name].to_numpy()
            if f.kind == "boolean":
                values = np.array([f._key(v) for v in values], dtype=object)
                values = np.where(values == None, False, values).astype(bool)  # noqa: E711
            elif f.numeric:
                import pandas as pd

                values = pd.to_numeric(frame[f.name], errors="coerce").to_numpy(dtype=float)
            else:
                values = values.astype(str).astype(object)
            cols[f.name] = values
        return cols

    def constraint_mask(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Rows of ``columns`` satisfying every constraint."""
        import numpy as np

        mask = np.ones(n, dtype=bool)
        for expr in self._compiled:
            mask &= _satisfied(expr, columns, n)
        return mask

    def valid_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """True for rows whose values are all levels of their factors and satisfy every constraint."""
        import numpy as np

        on_grid = np.ones(len(frame), dtype=bool)
        for f in self.factors:
            if f.name not in frame.columns:
                raise UserError(f"configuration is missing factor '{f.name}'")
            on_grid &= f.index_of(frame[f.name].to_numpy()) >= 0
        valid: np.ndarray = on_grid & self.constraint_mask(self._columns(frame), len(frame))
        return valid

    # -- encodings -----------------------------------------------------------------------------
    def to_level_index(self, frame: pd.DataFrame) -> np.ndarray:
        """Level indices, shape (rows, factors); a value that is not a level raises."""
        import numpy as np

        out = np.empty((len(frame), len(self.factors)), dtype=np.int64)
        for j, f in enumerate(self.factors):
            idx = f.index_of(frame[f.name].to_numpy())
            if (idx < 0).any():
                bad = frame[f.name].to_numpy()[np.argmax(idx < 0)]
                raise UserError(f"factor '{f.name}': value {brief(bad)} is not one of its levels")
            out[:, j] = idx
        return out

    def from_level_index(self, index: np.ndarray) -> pd.DataFrame:
        """Configurations from level indices (rows × factors)."""
        import numpy as np

        index = np.asarray(index, dtype=np.int64)
        if index.ndim != 2 or index.shape[1] != len(self.factors):
            raise ValueError(f"level index must be (rows, {len(self.factors)}), got {index.shape}")
        import pandas as pd

        return pd.DataFrame({f.name: f.level_array()[index[:, j]] for j, f in enumerate(self.factors)})

    def to_coded(self, frame: pd.DataFrame) -> np.ndarray:
        """Level indices mapped linearly onto [-1, 1] (a single-level factor codes as 0)."""
        import numpy as np

        index = self.to_level_index(frame).astype(float)
        span = np.array([max(f.n_levels - 1, 1) for f in self.factors], dtype=float)
        coded: np.ndarray = 2.0 * index / span - 1.0
        coded[:, [f.n_levels == 1 for f in self.factors]] = 0.0
        return coded

    def from_coded(self, coded: np.ndarray) -> pd.DataFrame:
        """Nearest levels of coded values in [-1, 1]."""
        import numpy as np

        coded = np.clip(np.asarray(coded, dtype=float), -1.0, 1.0)
        span = np.array([f.n_levels - 1 for f in self.factors], dtype=float)
        return self.from_level_index(np.rint((coded + 1.0) / 2.0 * span).astype(np.int64))

    # -- enumeration and sampling ----------------------------------------------------------------
    def _grid_index(self) -> np.ndarray:
        import numpy as np

        counts = [f.n_levels for f in self.factors]
        grids = np.indices(counts, dtype=np.int32 if self.size < 2**31 else np.int64)
        return grids.reshape(len(counts), -1).T

    def index_columns(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """Factor columns (natural dtypes) of level indices, rows × factors: what constraints evaluate."""
        return {f.name: f.level_array()[index[:, j]] for j, f in enumerate(self.factors)}

    def _valid_grid(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        if not self.enumerable:
            raise UserError(
                f"space: {self.size:,} configurations is more than {MAX_ENUMERATE:,} to enumerate; sample instead"
            )
        index = self._grid_index()
        columns = self.index_columns(index)
        return columns, self.constraint_mask(columns, len(index))

    def enumerate(self) -> pd.DataFrame:
        """Every valid configuration, first factor varying slowest; raises for huge spaces."""
        columns, mask = self._valid_grid()
        if not mask.any():
            raise UserError(self.explain_empty())
        import pandas as pd

        return pd.DataFrame({name: col[mask] for name, col in columns.items()}).reset_index(drop=True)

    def count_valid(self) -> int:
        """Exact number of valid configurations (enumerable spaces only)."""
        return int(self._valid_grid()[1].sum())

    def sample(self, n: int, seed: int | None = None, exclude: pd.DataFrame | None = None) -> pd.DataFrame:
        """``n`` distinct valid configurations, uniformly at random, reproducible by ``seed``.

        Enumerable spaces draw without replacement from the valid set. Huge spaces draw level
        indices in batches and keep valid, unseen rows (rejection sampling); when too few valid rows
        turn up the error says what fraction was valid.
        """
        import numpy as np

        if n < 0:
            raise UserError(f"sample size {n} must be >= 0")
        rng = np.random.default_rng(seed)
        excluded: set[tuple[int, ...]] = set()
        if exclude is not None and len(exclude):
            excluded = set(map(tuple, self.to_level_index(exclude)))
        if self.enumerable:
            valid = self.enumerate()
            if excluded:
                keep = [tuple(r) not in excluded for r in self.to_level_index(valid)]
                valid = valid[np.array(keep, dtype=bool)].reset_index(drop=True)
            if n > len(valid):
                raise UserError(f"sample size {n} is more than the {len(valid):,} valid configurations available")
            chosen = np.sort(rng.choice(len(valid), size=n, replace=False))
            return valid.iloc[rng.permutation(chosen)].reset_index(drop=True)
        return self._rejection_sample(n, rng, excluded)

    def _rejection_sample(self, n: int, rng: np.random.Generator, excluded: set[tuple[int, ...]]) -> pd.DataFrame:
        import numpy as np

        counts = np.array([f.n_levels for f in self.factors])
        found: dict[tuple[int, ...], None] = {}
        drawn = valid_seen = 0
        batch = max(4 * n, 10_000)
        while len(found) < n:
            index = rng.integers(0, counts, size=(batch, len(counts)))
            frame = self.from_level_index(index)
            mask = self.constraint_mask(self._columns(frame), batch)
            drawn += batch
            valid_seen += int(mask.sum())
            for row in map(tuple, index[mask]):
                if row not in excluded:
                    found.setdefault(row, None)
                    if len(found) == n:
                        break
            if drawn >= 200 * batch and len(found) < n:
                fraction = valid_seen / drawn
                raise UserError(
                    f"space: only {fraction:.2e} of random configurations are valid "
                    f"({len(found)} of {n} found after {drawn:,} draws); relax the constraints"
                )
        return self.from_level_index(np.array(list(found)[:n]))

    def neighbours(self, config: Mapping[str, Any]) -> pd.DataFrame:
        """Valid configurations one level step (up or down) from ``config`` along a single factor."""
        import numpy as np
        import pandas as pd

        base = self.to_level_index(pd.DataFrame([dict(config)]))[0]
        rows = []
        for j, f in enumerate(self.factors):
            for step in (-1, 1):
                moved = base[j] + step
                if 0 <= moved < f.n_levels:
                    row = base.copy()
                    row[j] = moved
                    rows.append(row)
        if not rows:
            return pd.DataFrame(columns=self.names)
        frame = self.from_level_index(np.array(rows))
        return frame[self.valid_mask(frame)].reset_index(drop=True)

    def explain_empty(self, frame: pd.DataFrame | None = None) -> str:
        """Why nothing in ``frame`` (default: the whole factorial) is valid: the first constraint that
        alone excludes every row, else the constraints together."""
        if frame is None:
            index = self._grid_index()
            columns, n = self.index_columns(index), len(index)
        else:
            columns, n = self._columns(frame), len(frame)
        for expr in self._compiled:
            if not _satisfied(expr, columns, n).any():
                return f"constraint {brief(expr.text, 100)} excludes every configuration"
        return "the constraints together exclude every configuration"


def _satisfied(expr: Expression, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Rows satisfying one constraint; an evaluation failure is the constraint's one-line error."""
    import numpy as np

    try:
        return np.broadcast_to(np.asarray(expr.evaluate(columns), dtype=bool), (n,))
    except ExpressionError as exc:  # already one line naming the constraint
        raise UserError(str(exc)) from None
    except (TypeError, ValueError, ArithmeticError) as exc:
        reason = " ".join(str(exc).split())[:100]
        raise UserError(f"constraint {brief(expr.text, 100)}: cannot be evaluated ({reason})") from None


def level_range(name: str, low: Any, high: Any, step: Any = 1, written: str | None = None) -> range:
    """``low..high`` by ``step`` as a range, refused before it is built when empty, huge or not integers."""
    written = written or f"{brief(low)}..{brief(high)} step {brief(step)}"
    if not all(_is_int(v) for v in (low, high, step)):
        raise UserError(f"factor {brief(name)}: low, high and step must be integers, got {written}")
    low, high, step = int(low), int(high), int(step)
    if step <= 0 or high < low:
        raise UserError(f"factor {brief(name)}: range {written} is empty")
    check_level_count(name, (high - low) // step + 1, f"range {written}")
    return range(low, high + 1, step)


def powers_of_two(name: str, pair: Any) -> list[int]:
    """The levels low, 2 low, ..., high of ``powers_of_two: [low, high]``, both powers of two, low <= high."""
    if (
        not isinstance(pair, (list, tuple))
        or len(pair) != 2
        or not all(_is_int(v) and v >= 1 and v & (v - 1) == 0 for v in pair)
        or pair[0] > pair[1]
    ):
        raise UserError(f"factor {brief(name)}: powers_of_two must be [low, high], powers of two with low <= high, "
                        f"got {brief(pair)}")
    low, high = (int(v).bit_length() - 1 for v in pair)
    check_level_count(name, high - low + 1, f"powers_of_two {brief(pair)}")
    return [2**e for e in range(low, high + 1)]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy's integers too, not its bool_


def _factor_from_dict(item: Mapping[str, Any]) -> Factor:
    """A factor from its mapping: explicit ``levels``, or ``low``/``high``/``step``, ``range``, ``powers_of_two``."""
    name, levels = check_factor_name(item["name"]), item.get("levels")
    if levels is not None and not isinstance(levels, (list, tuple)):
        raise UserError(f"factor '{name}': 'levels' must be a list, got {brief(levels)}")
    kind = item.get("kind") or item.get("type") or _guess_kind(levels)
    if kind == "integer" and levels is None and "low" in item:
        return Factor(name, kind, tuple(level_range(name, item["low"], item.get("high"), item.get("step", 1))))
    if kind == "integer" and levels is None and "range" in item:
        bounds = item["range"]
        if not isinstance(bounds, (list, tuple)) or len(bounds) not in (2, 3):
            raise UserError(f"factor '{name}': 'range' must be [low, high] or [low, high, step], got {brief(bounds)}")
        return Factor(name, kind, tuple(level_range(name, *bounds)))
    if kind == "ordinal" and levels is None and "powers_of_two" in item:
        return Factor(name, kind, tuple(powers_of_two(name, item["powers_of_two"])))
    return Factor(name, kind, tuple(levels or ()))


def _guess_kind(levels: Iterable[Any] | None) -> str:
    levels = list(levels or [])
    if levels and all(isinstance(v, bool) for v in levels):
        return "boolean"
    if levels and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels):
        return "integer" if all(isinstance(v, int) for v in levels) else "ordinal"
    return "categorical"
