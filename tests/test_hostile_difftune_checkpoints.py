"""Hostile DiffTune checkpoints (issue 29): a ``checkpoint.pt`` from anywhere is read with ``weights_only``, so
one whose pickle would run code is refused in one line naming the file, and the code never runs: when a
surrogate is loaded, when a training resumes, through the real ``tunelab difftune train`` and ``experiment``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from engine.errors import UserError
from engine.surrogates.difftune.train import CHECKPOINT, load_surrogate, model_table, train
from storage import Store
from storage.difftune.experiments import create_surrogate, surrogate
from tests.conftest import cli, run_cli
from tests.helpers.difftune_tiny import TINY, tiny_blocks, tiny_samples


class _Payload:
    """What a hostile checkpoint holds: unpickling it calls ``open(marker, "w")``, creating the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


def hostile_checkpoint(folder: Path, marker: Path) -> Path:
    """A checkpoint shaped like a real one, with a payload among its values."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CHECKPOINT
    torch.save({"config": {}, "epoch": 1, "network": {}, "payload": _Payload(marker)}, path)
    return path


def refused(result: subprocess.CompletedProcess, path: Path) -> str:
    """The one stderr line of a refused command, which names the checkpoint."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(path) in lines[0] and "retrain" in lines[0], lines[0]
    return lines[0]


def test_every_loader_refuses_a_checkpoint_whose_pickle_runs_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = hostile_checkpoint(tmp_path / "evil", marker)
    samples = tiny_samples(tiny_blocks()[:10], per_block=2)
    for load in (lambda: load_surrogate(path.parent), lambda: model_table(path.parent),
                 lambda: train(samples, path.parent, 1, TINY)):
        with pytest.raises(UserError) as refusal:
            load()
        assert str(path) in str(refusal.value) and "\n" not in str(refusal.value)
        assert not marker.exists(), "the checkpoint's pickle ran"
    torch.load(path, weights_only=False)  # what the code did before: the payload is live
    assert marker.exists()


def test_a_damaged_or_foreign_checkpoint_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "damaged"
    folder.mkdir()
    (folder / CHECKPOINT).write_bytes(b"PK\x03\x04 not a whole archive")
    with pytest.raises(UserError, match="cannot be read"):
        load_surrogate(folder)
    torch.save({"weights": torch.zeros(2)}, folder / CHECKPOINT)  # plain tensors, but not a surrogate's
    with pytest.raises(UserError, match="not a DiffTune surrogate checkpoint"):
        load_surrogate(folder)


def test_a_checkpoint_written_before_the_fix_still_loads(tmp_path: Path) -> None:
    """Checkpoints always held only tensors and plain values: the ones trained so far stay usable."""
    samples = tiny_samples(tiny_blocks()[:10], per_block=4)
    trained, _ = train(samples, tmp_path / "s", 1, TINY)
    loaded = load_surrogate(tmp_path / "s")
    blocks, tables = samples.blocks[:2], [samples.table(0, 0), samples.table(1, 100)]
    assert (loaded.predict(blocks, tables) == trained.predict(blocks, tables)).all()
    assert model_table(tmp_path / "s") == samples.model


@pytest.fixture(scope="module")
def world(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with a small simulated data set 'tiny' (the real CLI made it)."""
    db = tmp_path_factory.mktemp("hostile-checkpoints") / "tunelab.duckdb"
    run_cli("difftune", "dataset", "--arch", "haswell", "--samples", "200", "--limit", "40", "--chunk", "200",
            "--name", "tiny", db=db, check=True)
    return db


def test_the_cli_refuses_a_hostile_checkpoint_when_training_resumes(world: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran-train"
    path = hostile_checkpoint(Path(f"{world}.surrogates") / "evil", marker)
    result = run_cli("difftune", "train", "--dataset", "tiny", "--name", "evil", "--epochs", "1", db=world)
    assert not marker.exists(), "the checkpoint's pickle ran"
    refused(result, path)


def test_the_cli_refuses_a_hostile_checkpoint_when_an_experiment_loads_it(world: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran-experiment"
    path = hostile_checkpoint(Path(f"{world}.surrogates") / "planted", marker)
    with Store(world) as store:
        create_surrogate(store, name="planted", dataset="tiny", config={}, folder=f"{world.name}.surrogates/planted")
    result = cli("difftune", "experiment", "recovery", "--surrogate", "planted", db=world)
    assert not marker.exists(), "the checkpoint's pickle ran"
    refused(result, path)
    with Store(world) as store:
        assert surrogate(store, "planted") is not None  # what was stored stays
