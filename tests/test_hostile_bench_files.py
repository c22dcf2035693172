"""The bench scripts read received files as data only (issue 29): an ``.npz`` whose object array would run code
when unpickled is refused by ``bench/costmodel_data.py``, and the code never runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from engine.io.paths import REPO_ROOT


class _Payload:
    """Unpickling it calls ``open(marker, "w")``, creating the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


def test_the_cost_model_data_summary_never_unpickles_a_graph_file(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = tmp_path / "graphs"
    folder.mkdir()
    np.savez(folder / "tile_kernel_0_evil.npz", task=np.array([_Payload(marker)], dtype=object))
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "costmodel_data.py"), str(folder)],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode != 0 and "allow_pickle" in done.stderr, done.stderr
    assert not marker.exists(), "the file's pickle ran"
