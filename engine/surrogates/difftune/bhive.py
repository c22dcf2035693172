"""BHive's basic blocks and the llvm-mca anchor sample, read from the data folder (never copied into the repo).

The anchor sample (2,000 blocks with llvm-mca's predictions) comes first in every selection, so measured
figures share blocks with the llvm-mca figures; then the other distinct BHive blocks in a fixed shuffled
order. Blocks on BHive's may-alias list are left out: every page maps to one physical page in the
harness, so they may measure false dependences (DiffTune drops them too).
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pandas as pd

from engine.errors import UserError
from engine.io.paths import data_dir

ANCHOR = Path("llvm_mca_anchor") / "bhive_sample2000_llvm_mca_cycles100.csv"
#: Archs of the anchor's llvm-mca columns (``<arch>_mca<version>``).
ANCHOR_ARCHS = ("haswell", "skylake", "ivybridge")
SOURCES = ("anchor", "bhive")


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
    if not path.is_file():
        raise UserError(f"anchor sample {path}: not found")
    return pd.read_csv(path, dtype={"hex": str})


def may_alias(folder: Path | None = None) -> frozenset[str]:
    with gzip.open(_folder(folder) / "bhive" / "may-alias.csv.gz", "rt") as handle:
        return frozenset(line.strip().split(",")[0] for line in handle if line.strip())


def distinct_blocks(folder: Path | None = None) -> list[str]:
    """Every distinct block of BHive's application files, sorted (the order the anchor was drawn from)."""
    found: set[str] = set()
    for path in sorted((_folder(folder) / "bhive" / "sources").glob("*.csv.gz")):
        with gzip.open(path, "rt") as handle:
            found.update(line.split(",", 1)[0].strip() for line in handle if line.strip())
    return sorted(found)


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
