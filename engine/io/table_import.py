"""Import a CSV of measured configurations as an exhaustive "table study".

A table study replays measurements instead of running anything (the Laplacian data set is one),
so importing it means guessing the search space from the columns themselves:

* a column that holds one value in every row is not a factor: it is dropped and reported;
* ``true``/``false`` text (any case) is a boolean factor; integer numbers are an ordinal factor with
  int levels; other numbers an ordinal factor with float levels; any other text a categorical one
  (levels sorted, so the result does not depend on row order);
* the objective column must be numeric text; an empty, ``NaN``, ``NA``, ``null`` or infinite
  value marks the row ``invalid`` (kept and counted), any other text is an error naming the row;
* columns named ``status`` and ``error`` are honoured, not treated as factors, and the columns saying how a
  measurement was taken (``repeat``, ``host``, ``started_at`` ...: :data:`engine.study.PROVENANCE_COLUMNS`) are
  dropped and reported, so a CSV written by :func:`engine.io.export.study_to_csv` imports back unchanged; a factor
  named like another column of Tunelab's tables (``value``, ``n_repeats``) is refused;
* a cell that a CSV export wrote with a ``'`` in front (:func:`engine.io.spreadsheet.spreadsheet_quoted`: text a
  spreadsheet would run as a formula) has it taken off and keeps its blanks; every other cell is stripped of leading
  and trailing blanks.

Everything is column-wise pandas: 23,120 Laplacian rows import in well under a second.

Input is hostile until proven otherwise: at most :data:`MAX_IMPORT_BYTES` are read or inflated from
gzip (a gzip bomb is refused 64 MiB in, not at 1 GiB), JSON goes through :func:`load_json` (no key
twice, no nesting past :data:`MAX_DEPTH`), and every refusal is one line naming the file and the value.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.io.jsonable import plain
from engine.io.spreadsheet import spreadsheet_quoted, unquote_cell
from engine.runners.status import STATUSES
from engine.space.factors import Factor, Space, first_duplicate
from engine.study import PROVENANCE_COLUMNS, StudySpec, check_column_names

_MISSING_WORDS = {"", "na", "nan", "n/a", "null", "none"}
_BOOL_WORDS = {"true": True, "false": False}
#: Most bytes an import may hold, read or inflated from gzip: 4x the largest Kernel Tuner cache we know
#: (16 MB), and small enough that refusing a gzip bomb never costs more than this much memory.
MAX_IMPORT_BYTES = 64 * 2**20
#: Deepest nesting of lists and mappings a spec or an import may hold (a Kernel Tuner cache needs 4).
MAX_DEPTH = 32
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 2**20
#: Unicode categories that break a line or are invisible controls.
_CONTROL = frozenset({"Cc", "Zl", "Zp"})

Source = str | Path | bytes | bytearray | BinaryIO


@dataclass
class ImportedTable:
    """A study spec plus its measured rows, ready for the store to save as a table study.

    ``table`` has the factor columns in spec order, then ``value`` (float, NaN unless ok),
    ``status`` and ``error`` (str or None). ``extras`` holds per-row numbers an importer found
    besides the objective (Kernel Tuner's compile/benchmark times), aligned with ``table``.
    """

    spec: StudySpec
    table: pd.DataFrame
    report: dict[str, Any]
    extras: pd.DataFrame | None = field(default=None)


def study_name_from(text: str, fallback: str = "imported") -> str:
    """A valid study name made from a file stem: unusual characters become ``_``, ≤ 100 chars."""
    name = re.sub(r"[^A-Za-z0-9 _.\-]", "_", text).strip(" _.-")[:100].rstrip()
    return name or fallback


def source_name(source: Source) -> str:
    """The bare file name of a path or uploaded file (never a directory), or '' for raw bytes; control
    characters become ``?`` since the name lands in one-line messages and the study's runner."""
    raw = source if isinstance(source, (str, Path)) else str(getattr(source, "name", "") or "")
    return _printable(Path(raw).name[:200])


def _printable(text: str) -> str:
    return "".join("?" if unicodedata.category(ch) in _CONTROL else ch for ch in text)


def listing(names: Iterable[Any], shown: int = 10) -> str:
    """Names for a one-line message: the first ``shown``, each cut short, then how many in all."""
    names = [_printable(str(n)) for n in names]
    head = ", ".join(n if len(n) <= 40 else n[:39] + "…" for n in names[:shown])
    return head + (f" … ({len(names):,} in all)" if len(names) > shown else "")


def read_bytes(source: Source, what: str, limit: int = MAX_IMPORT_BYTES) -> bytes:
    """The raw content of a path, bytes or binary file object; gzip is undone when present.

    At most ``limit`` bytes are read or inflated, so a huge file or a gzip bomb is refused, not loaded.
    """
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    elif isinstance(source, (str, Path)):
        try:
            with open(source, "rb") as handle:  # read(limit + 1), not read_bytes(): /dev/zero never ends
                data = handle.read(limit + 1)
        except FileNotFoundError:  # ``what`` names the file; the path says where it was looked for
            raise UserError(f"{what}: no such file ({_printable(brief(str(source), 120))})") from None
        except IsADirectoryError:
            raise UserError(f"{what}: is a folder, not a file ({_printable(brief(str(source), 120))})") from None
    elif hasattr(source, "read"):
        data = source.read(limit + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
    else:
        raise UserError(f"{what}: expected a path, bytes or a file object, got {type(source).__name__}")
    if len(data) > limit:
        raise UserError(f"{what}: more than {limit:,} bytes, the most an import may hold")
    return gunzip(data, what, limit)


def gunzip(data: bytes, what: str, limit: int = MAX_IMPORT_BYTES) -> bytes:
    """Decompress gzip data (detected by its magic bytes, not the file name); plain data passes through.

    Inflation stops past ``limit`` bytes (a 1 MB gzip of zeros inflates to 1 GiB). A gzip stream cut
    short returns what it holds, so an interrupted copy of a file still reaches the format's own repair
    rules; a corrupt one is a one-line error. Concatenated members are joined, as ``gzip`` does.
    """
    if not data.startswith(GZIP_MAGIC):
        return data
    pieces: list[bytes] = []  # joined once at the end: a growing bytearray would peak at twice the limit
    size, rest = 0, data
    while rest.startswith(GZIP_MAGIC):
        inflater = zlib.decompressobj(wbits=31)
        pending = rest
        try:
            while not inflater.eof:
                piece = inflater.decompress(pending, min(_CHUNK, limit + 1 - size))
                pieces.append(piece)
                size += len(piece)
                if size > limit:
                    raise UserError(f"{what}: inflates to more than {limit:,} bytes, the most an import may hold")
                pending = inflater.unconsumed_tail
                if not piece and not pending:
                    return b"".join(pieces)  # cut short: what it holds
        except zlib.error as exc:
            raise UserError(f"{what}: not a valid gzip file ({' '.join(str(exc).split())})") from None
        rest = inflater.unused_data
    return b"".join(pieces)


def check_depth(data: Any, what: str, limit: int = MAX_DEPTH) -> None:
    """Refuse lists and mappings nested deeper than ``limit``; walks with a stack, since a recursive walk
    (``repr``, ``str``, pandas) over deep input is exactly what would fail later."""
    stack = [(data, 1)] if isinstance(data, (Mapping, list)) else []
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, Mapping) else value
        if depth > limit:
            raise UserError(f"{what}: lists or mappings nested more than {limit} deep")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list)))


class _DuplicateKey(Exception):
    """Raised inside json.loads; :func:`load_json` words it with the file's name."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _DuplicateKey(first_duplicate([key for key, _ in pairs]))
    return data


def load_json(text: str, what: str) -> Any:
    """``json.loads`` that refuses, in one line naming ``what``, what it would accept silently or crash on:
    a key given twice (JSON keeps the last), nesting too deep (RecursionError), an integer of more
    digits than Python converts. A syntax error stays a :class:`json.JSONDecodeError` for the caller."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise UserError(f"{what}: key {brief(exc.args[0])} appears twice in one object") from None
    except RecursionError:
        raise UserError(f"{what}: lists or objects nested too deep to read") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # int('9' * 5000): over Python's integer conversion limit
        raise UserError(f"{what}: a number is too long to read ({' '.join(str(exc).split())[:80]}…)") from None
    check_depth(data, what)
    return data


def unquote_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A CSV export as pandas read it, with the quotes of its text cells and column names taken off."""
    names = [unquote_cell(c) if isinstance(c, str) else c for c in frame.columns]
    text = [c for c in range(frame.shape[1]) if frame.dtypes.iloc[c].kind == "O"]
    frame = frame.set_axis(names, axis=1)
    for c in text:
        frame.isetitem(c, frame.iloc[:, c].map(lambda v: unquote_cell(v) if isinstance(v, str) else v))
    return frame


def _unquote_or_strip(cells: pd.Series) -> pd.Series:
    """Cells of text read from a CSV: quoted ones unquoted (blanks kept), every other one stripped."""
    stripped = cells.str.strip()
    quoted = cells.str.startswith("'", na=False)
    if not quoted.any():
        return stripped
    quoted[quoted] = cells[quoted].str[1:].map(spreadsheet_quoted)
    return cells.str[1:].where(quoted, stripped)


def summarise(table: pd.DataFrame, factors: list[str], direction: str) -> dict[str, Any]:
    """Counts and the best measured row, the part of an import report every importer shares."""
    status = table["status"]
    ok = status == "ok"
    values = table["value"].where(ok)
    report: dict[str, Any] = {
        "rows": int(len(table)),
        "valid_rows": int(ok.sum()),
        "invalid_rows": int((status == "invalid").sum()),
        "failed_rows": int(status.isin(["failed", "timeout"]).sum()),
        "distinct_configs": int(len(table.drop_duplicates(subset=factors))) if factors else 0,
        "factors": len(factors),
        "optimum": None,
        "optimum_config": None,
    }
    if ok.any():
        best = values.idxmin() if direction == "minimize" else values.idxmax()
        report["optimum"] = float(values[best])
        report["optimum_config"] = {name: plain(table.at[best, name]) for name in factors}
    return report


def _read_csv(source: Source, label: str) -> pd.DataFrame:
    data = read_bytes(source, f"table {label}")
    try:
        # header=None keeps duplicate names visible (pandas would rename the second 'a' to 'a.1')
        frame = pd.read_csv(io.BytesIO(data), header=None, dtype=str, keep_default_na=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise UserError(f"table {label}: the file is empty") from None
    except pd.errors.ParserError as exc:
        message = " ".join(str(exc).split())
        raise UserError(f"table {label}: not valid CSV ({message})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"table {label}: not UTF-8 text (byte {exc.start})") from None
    frame.columns = _unquote_or_strip(frame.iloc[0].astype(str)).tolist()
    frame = frame.iloc[1:].reset_index(drop=True)
    duplicated = frame.columns[frame.columns.duplicated()]
    if len(duplicated):
        raise UserError(f"table {label}: column {brief(duplicated[0])} appears twice")
    return frame


def _infer_factor(name: str, text: pd.Series, label: str) -> tuple[Factor, pd.Series]:
    """The factor a column of text describes, and the column converted to the factor's values."""
    empty = text == ""
    if empty.any():
        row = int(np.argmax(empty.to_numpy())) + 1
        raise UserError(
            f"table {label}: column {brief(name)} row {row}: empty value (pass ignore=[{brief(name)}] to skip it)"
        )
    lower = text.str.lower()
    if lower.isin(list(_BOOL_WORDS)).all():
        values = lower.map(_BOOL_WORDS).astype(bool)
        return Factor(name, "boolean", (False, True)), values
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.notna().all():
        return Factor(name, "ordinal", tuple(np.unique(numbers.to_numpy()).tolist())), numbers
    return Factor(name, "categorical", tuple(sorted(text.unique()))), text


def _objective(text: pd.Series, objective: str, label: str) -> tuple[pd.Series, pd.Series]:
    """Objective values (NaN where missing or not finite) and a mask of rows that have one."""
    numbers = pd.to_numeric(text, errors="coerce")
    missing_word = text.str.lower().isin(_MISSING_WORDS)
    bad = numbers.isna() & ~missing_word
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise UserError(
            f"table {label}: objective {brief(objective)} row {row + 1}: {brief(text.iloc[row])} is not a number"
        )
    finite = pd.Series(np.isfinite(numbers.to_numpy(dtype=float)), index=text.index)
    return numbers.astype(float).where(finite), finite


def _statuses(frame: pd.DataFrame, has_value: pd.Series, label: str) -> tuple[pd.Series, pd.Series]:
    """Row status and error text: a ``status``/``error`` column when the file has one, else derived."""
    if "status" in frame:
        status = frame["status"].str.lower()
        unknown = ~status.isin(STATUSES)
        if unknown.any():
            row = int(np.argmax(unknown.to_numpy()))
            raise UserError(
                f"table {label}: status row {row + 1}: {brief(frame['status'].iloc[row])} "
                f"is not one of {', '.join(STATUSES)}"
            )
        status = status.where(has_value | (status != "ok"), "invalid")
    else:
        status = pd.Series(np.where(has_value, "ok", "invalid"), index=frame.index)
    if "error" in frame:
        error = frame["error"].where((frame["error"] != "") & (status != "ok"))
    else:
        error = pd.Series(np.where(has_value, None, "no finite objective value"), index=frame.index)  # type: ignore[call-overload]  # numpy stubs refuse a None branch; object result is intended
    error = pd.Series(error.astype(object).where(error.notna(), None), index=frame.index, dtype=object)
    return status.astype(str), error


def import_table(
    path_or_buffer: Source,
    objective: str,
    direction: str = "minimize",
    name: str | None = None,
    ignore: Iterable[str] = (),
) -> ImportedTable:
    """Read a CSV (optionally gzip-compressed) of measured configurations into a table study.

    ``ignore`` names columns to leave out (run ids, host names, secondary metrics).
    """
    label = source_name(path_or_buffer) or "upload"
    frame = _read_csv(path_or_buffer, label)
    if len(frame) == 0:
        raise UserError(f"table {label}: no data rows")
    if objective not in frame.columns:
        raise UserError(
            f"table {label}: objective column {brief(objective)} not found; columns are: {listing(frame.columns)}"
        )
    ignore = list(ignore)
    unknown = [c for c in ignore if c not in frame.columns]
    if unknown:
        raise UserError(
            f"table {label}: ignore column {brief(unknown[0])} not found; columns are: {listing(frame.columns)}"
        )
    frame = frame.apply(_unquote_or_strip)

    values, has_value = _objective(frame[objective], objective, label)
    status, error = _statuses(frame, has_value, label)
    values = values.where(status == "ok")

    given = [c for c in frame.columns if c not in {objective, "status", "error", *ignore}]
    provenance = [c for c in given if c in PROVENANCE_COLUMNS]
    candidates = [c for c in given if c not in provenance]
    constant = [c for c in candidates if frame[c].nunique() <= 1]
    factor_names = [c for c in candidates if c not in constant]
    if not factor_names:
        raise UserError(f"table {label}: no factor columns (constant columns: {listing(constant) or 'none'})")

    factors, columns = [], {}
    for column in factor_names:
        factor, converted = _infer_factor(column, frame[column], label)
        factors.append(factor)
        columns[column] = converted
    table = pd.DataFrame(columns)
    table["value"] = values.astype(float)
    table["status"] = status
    table["error"] = error
    table = table.reset_index(drop=True)

    spec = StudySpec(
        name=name if name is not None else study_name_from(Path(label.removesuffix(".gz")).stem),
        space=Space(factors),
        objective=objective,
        direction=direction,
        runner={"kind": "table", "source": label},
        description=f"Imported from {label}",
    )
    check_column_names(spec, f"table {label}")
    report = summarise(table, factor_names, direction)
    report.update(constant_columns_dropped=constant, provenance_columns_dropped=provenance, ignored_columns=ignore)
    return ImportedTable(spec=spec, table=table, report=report)
