"""Where the shared data sets live: ``$TUNELAB_DATA``, else ``../shared/data`` beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path | None:
    """The data folder, or None when it is absent (tests that need it then skip)."""
    env = os.environ.get("TUNELAB_DATA")
    candidate = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def reference_dir() -> Path | None:
    """R reference fixtures (``shared/reference``), beside the data folder."""
    data = data_dir()
    candidate = (data.parent / "reference") if data else REPO_ROOT.parent / "shared" / "reference"
    return candidate if candidate.is_dir() else None
