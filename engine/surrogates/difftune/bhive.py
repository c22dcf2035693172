"""BHive's basic blocks and the llvm-mca anchor sample, read from the data folder (never copied into the repo).

The anchor sample (2,000 blocks with llvm-mca's predictions) comes first in every selection, so measured
figures share blocks with the llvm-mca figures; then the other distinct BHive blocks in a fixed shuffled
order. Blocks on BHive's may-alias list are left out: every page maps to one physical page in the
harness, so they may measure false dependences (DiffTune drops them too).
"""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd

from engine.errors import UserError, brief
from engine.io.paths import data_dir
from engine.io.table_import import read_bytes

ANCHOR = Path("llvm_mca_anchor") / "bhive_sample2000_llvm_mca_cycles100.csv"
#: Archs of the anchor's llvm-mca columns (``<arch>_mca<version>``).
ANCHOR_ARCHS = ("haswell", "skylake", "ivybridge")
SOURCES = ("anchor", "bhive")
#: A block as BHive writes it: whole bytes in hexadecimal, at most the harness's 64 KiB (BHive's longest is 2 KiB).
_BLOCK = re.compile(r"(?:[0-9a-f]{2}){1,65536}")


def _folder(folder: Path | None) -> Path:
    found = folder or data_dir()
    if found is None or not (found / "bhive").is_dir():
        raise UserError(f"data folder {found or '(none)'}: no bhive/ in it (set TUNELAB_DATA)")
    return found


def available(folder: Path | None = None) -> bool:
    """Whether the data folder holds BHive and the anchor sample (a dashboard installed elsewhere may lack it)."""
    found = folder or data_dir()
    return found is not None and (found / "bhive").is_dir() and (found / ANCHOR).is_file()


def anchor(folder: Path | None = None) -> pd.DataFrame:
    """The anchor sample: ``hex``, ``n_instr`` and llvm-mca's cycles per 100 iterations per arch and version."""
    path = _folder(folder) / ANCHOR
    what = f"anchor sample {path.name}"
    if not path.is_file():
        raise UserError(f"anchor sample {path}: not found")
    try:
        frame = pd.read_csv(io.StringIO(_text(path, what)), dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:  # pandas' own errors echo nothing of the user's
        raise UserError(f"{what}: not a CSV table ({' '.join(str(exc).split())[:120]})") from None
    if "hex" not in frame.columns:
        raise UserError(f"{what}: no 'hex' column (columns: {brief(list(frame.columns))})")
    frame["hex"] = [_hex(cell, what, row + 2) for row, cell in enumerate(frame["hex"])]
    for column in frame.columns.drop("hex"):
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() | ~np.isfinite(numbers)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise UserError(f"{what} line {row + 2}: {column} {brief(frame[column].iloc[row], 40)} is not a number")
        frame[column] = numbers
    return frame


def may_alias(folder: Path | None = None) -> frozenset[str]:
    return frozenset(_first_fields(_folder(folder) / "bhive" / "may-alias.csv.gz"))


def distinct_blocks(folder: Path | None = None) -> list[str]:
    """Every distinct block of BHive's application files, sorted (the order the anchor was drawn from)."""
    found: set[str] = set()
    for path in sorted((_folder(folder) / "bhive" / "sources").glob("*.csv.gz")):
        found.update(_first_fields(path))
    return sorted(found)


def _text(path: Path, what: str) -> str:
    """A data-folder file's text, gzip undone, read within the import bound (a bomb is refused, not inflated)."""
    try:
        return read_bytes(path, what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what}: not UTF-8 text (byte {exc.start:,})") from None


def _first_fields(path: Path) -> list[str]:
    """The block (first field) of each non-blank line of a BHive CSV (``hex,throughput``, or ``hex`` alone)."""
    what = f"BHive file {path.name}"
    return [_hex(line.split(",", 1)[0], what, number)
            for number, line in enumerate(_text(path, what).splitlines(), start=1) if line.strip()]


def _hex(cell: str, what: str, line: int) -> str:
    """A block's hex, lower-cased; anything else is one line naming the file and the line. An empty block stays
    (BHive's sources hold 112, which the harness refuses as such): dropping it would reshuffle the selection."""
    block = cell.strip().lower()
    if block and not _BLOCK.fullmatch(block):
        raise UserError(f"{what} line {line}: {brief(cell, 40)} is not a basic block in hexadecimal")
    return block


def select(limit: int | None = None, source: str = "bhive", folder: Path | None = None, seed: int = 0) -> list[str]:
    """Blocks to work on, may-alias ones left out: the anchor sample first; with ``source="bhive"``, then
    the rest of BHive in a fixed shuffled order (``seed``); at most ``limit``."""
    if source not in SOURCES:
        raise UserError(f"source {source!r}: expected one of {', '.join(SOURCES)}")
    if limit is not None and limit < 1:
        raise UserError(f"limit {limit}: must be at least 1")
    excluded = may_alias(folder)
    chosen = [h for h in anchor(folder)["hex"] if h not in excluded]
    if source == "bhive" and (limit is None or limit > len(chosen)):
        seen = set(chosen)
        rest = [h for h in distinct_blocks(folder) if h not in excluded and h not in seen]
        random.Random(seed).shuffle(rest)
        chosen += rest
    return chosen[:limit] if limit is not None else chosen
