"""Hostile paths and inputs (issue 18): an export never destroys the database, a device, a FIFO or
what a symlink points to; a ``--db`` that holds no database is refused; whatever goes wrong in a
command is one line. Real files, real DuckDB databases, the real ``tunelab`` command."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.errors import UserError
from engine.io.files import export_target, write_export
from engine.io.paths import REPO_ROOT
from engine.space.factors import Factor, Space
from engine.study import StudySpec
from storage import Store
from tests.conftest import cli, one_line_error, run_cli

SPACE = Space([Factor("a", "ordinal", (1, 2, 3)), Factor("b", "ordinal", (1, 2))])
RUNNER = {"kind": "command", "command": [sys.executable, "-c", "print('time: 1')"], "metric": {"regex": r"time: (\S+)"}}


@pytest.fixture
def stored(db_path: Path) -> Path:
    """A database with one study and six measurements."""
    with Store(db_path) as store:
        study = store.create_study(StudySpec("toy", SPACE, objective="time", runner=RUNNER))
        for i, config in enumerate(SPACE.enumerate().to_dict(orient="records")):
            store.record_measurement(study, config, float(i + 1), repeat=0)
    return db_path


def intact(db: Path) -> None:
    with Store(db) as store:
        assert store.study_names() == ["toy"] and len(store.measurements("toy")) == 6


# -- exports ----------------------------------------------------------------------------------------
def test_an_export_onto_the_database_or_its_log_is_refused_and_the_database_survives(stored, tmp_path):
    one_line_error(cli("export", "study", "toy", "--out", str(stored), db=stored), "is the database", str(stored))
    os.link(stored, tmp_path / "alias.duckdb")
    (tmp_path / "sub").mkdir()
    for out in (stored, Path(f"{stored}.wal"), tmp_path / "sub" / ".." / stored.name, tmp_path / "alias.duckdb"):
        for what in (("export", "study", "toy", "--out", str(out)), ("export", "best", "--study", "toy", "--out", str(out)),
                     ("export", "report", "--study", "toy", "--out", str(out)),
                     ("design", "random", "--study", "toy", "--runs", "2", "--out", str(out))):
            one_line_error(cli(*what, db=stored), "is the database")
    assert not Path(f"{stored}.wal").exists()
    intact(stored)


def test_a_fifo_is_refused_and_stays_a_fifo(stored, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(run_cli("export", "study", "toy", "--out", str(fifo), db=stored, timeout=60), "named pipe", str(fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_is_refused_and_stays_a_device(stored):
    null = Path("/dev/null")
    if not null.is_char_device():
        pytest.skip("/dev/null is not a character device here")
    with pytest.raises(UserError, match="character device"):  # checked in-process first: a regression must
        export_target(null.parent, null.name)                  # not get the chance to replace the real one
    before = os.lstat(null)
    try:
        one_line_error(cli("export", "study", "toy", "--out", str(null), db=stored), "character device")
        one_line_error(run_cli("export", "best", "--study", "toy", "--out", str(null), db=stored), "character device")
    finally:
        if not null.is_char_device() and os.geteuid() == 0:  # heal the machine before failing
            null.unlink()
            os.mknod(null, stat.S_IFCHR | 0o666, before.st_rdev)
    assert null.is_char_device() and os.lstat(null).st_rdev == before.st_rdev


def test_a_symlinked_folder_or_file_is_refused(stored, tmp_path):
    real, outside = tmp_path / "real", tmp_path / "outside.txt"
    real.mkdir()
    outside.write_text("keep")
    (tmp_path / "link").symlink_to(real)
    (real / "link.json").symlink_to(outside)
    one_line_error(cli("export", "study", "toy", "--out", str(tmp_path / "link" / "toy.json"), db=stored),
                   "symbolic link", str(tmp_path / "link"))
    one_line_error(run_cli("export", "report", "--study", "toy", "--out", str(tmp_path / "link"), db=stored), "symbolic link")
    one_line_error(cli("export", "study", "toy", "--out", str(real / "link.json"), db=stored), "symbolic link")
    assert sorted(p.name for p in real.iterdir()) == ["link.json"] and outside.read_text() == "keep"


def test_replacing_an_existing_file_is_said(stored, tmp_path):
    out = tmp_path / "toy.json"
    first = run_cli("export", "study", "toy", "--out", str(out), db=stored, check=True)
    assert first.stderr == ""
    out.chmod(0o640)
    again = cli("export", "study", "toy", "--out", str(out), db=stored, check=True)
    assert again.stderr.strip() == f"tunelab: replaced the existing file {out}"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and json.loads(out.read_text())["format"] == "tunelab-study"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")) == []


WRITER = """
import sys
from engine.io.files import write_export
print("writing", flush=True)
write_export(b"n" * 400_000_000, sys.argv[1], "data.bin")
print("written", flush=True)
"""


def test_an_export_killed_while_writing_leaves_the_old_file_or_the_new_one_never_half(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=REPO_ROOT)
    assert writer.stdout.readline().strip() == "writing"
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".tmp-*.part")) and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    writer.send_signal(signal.SIGKILL)
    writer.wait(30)
    size = target.stat().st_size
    assert size in (3, 400_000_000)
    if size == 3:
        assert target.read_bytes() == b"old"


def test_write_export_refuses_special_targets_in_process(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    for name, message in (("fifo", "named pipe"), ("folder", "is a folder")):
        with pytest.raises(UserError, match=message):
            write_export("x", tmp_path, name)
    with pytest.raises(UserError, match="the database"):
        write_export("x", tmp_path, "db.duckdb", keep=[tmp_path / "db.duckdb"])
    assert not (tmp_path / "db.duckdb").exists()


# -- databases ---------------------------------------------------------------------------------------
def test_a_db_that_holds_no_database_is_refused(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n")
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    os.mkfifo(tmp_path / "fifo")
    one_line_error(run_cli("--db", str(csv), "study", "list", timeout=60), f"database {csv}", "not a DuckDB database")
    for db, needle in (("", "empty path"), (str(csv), "not a DuckDB database"), (str(empty), "an empty file"),
                       (str(tmp_path), "is a folder"), (str(tmp_path / "fifo"), "not a regular file")):
        one_line_error(cli("--db", db, "study", "list"), f"database {db}", needle)
        one_line_error(cli("--db", db, "run", "--study", "toy"), needle)
    assert csv.read_text() == "a,b\n1,2\n" and empty.stat().st_size == 0
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_an_empty_tunelab_db_variable_is_refused(tmp_path):
    exe = Path(sys.executable).with_name("tunelab")
    result = subprocess.run([str(exe), "study", "list"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            env={**os.environ, "TUNELAB_DB": ""})
    one_line_error(result, "database ''", "empty path")
    assert list(tmp_path.iterdir()) == []


def test_a_database_damaged_under_its_data_is_one_line_naming_it(stored, tmp_path):
    """Damage one 256 KiB block at a time: the file opens or not, a query fails or not, but every
    failure is one line naming the file, and at least one shows up at query time."""
    pristine = stored.read_bytes()
    blocks = (len(pristine) - 12288) // 262144
    at_query_time = 0
    for block in range(blocks):
        damaged = tmp_path / f"damaged-{block}.duckdb"
        data = bytearray(pristine)
        start = 12288 + block * 262144 + 8
        data[start:start + 64] = b"\xff" * 64
        damaged.write_bytes(bytes(data))
        result = (run_cli if block == 1 else cli)("study", "show", "toy", db=damaged)
        if result.returncode != 0:
            line = one_line_error(result, str(damaged))
            at_query_time += "cannot open" not in line
    assert at_query_time >= 1


# -- inputs too big, too deep or of the wrong type ---------------------------------------------------------
def test_huge_counts_deep_json_and_wrongly_typed_options_are_one_line(stored):
    one_line_error(run_cli("design", "lhs", "--study", "toy", "--runs", "1000000000"), "--runs 1000000000", "10,000")
    one_line_error(cli("tune", "--study", "toy", "--budget", "10000000000", "--auto", db=stored), "--budget 10000000000")
    for options, needles in (('{"threshold": "x"}', ("threshold", '"x"', "float")),
                             ('{"quadratic_levels": 2.5}', ("quadratic_levels", "2.5", "int")),
                             ('{"inverse": "yes"}', ("inverse", "bool")),
                             ('{"nope": 1}', ("nope", "not an option")),
                             ('{"threshold": NaN}', ("NaN",)),
                             ('{"threshold": 1e999}', ("1e999",)),
                             ("[" * 50_000 + "]" * 50_000, ("nested too deeply",))):
        one_line_error(cli("tune", "--study", "toy", "--budget", "5", "--auto", "--options", options, db=stored), *needles)
    one_line_error(run_cli("tune", "--study", "toy", "--budget", "5", "--options", '{"grow": "3"}', db=stored),
             "grow", "float")
    one_line_error(cli("bench", "--table", "toy", "--options", '{"GA": {"mutation": "high"}}', db=stored), "mutation", "float")
    intact(stored)


def test_an_unexpected_error_is_one_line_asking_for_a_report(capsys, monkeypatch):
    from app.cli._errors import report

    monkeypatch.delenv("TUNELAB_DEBUG", raising=False)
    assert report(RuntimeError("boom\nsecond line"), "x.duckdb") == 1
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and line.startswith("tunelab: error: RuntimeError: boom") and "report" in line
    monkeypatch.setenv("TUNELAB_DEBUG", "1")
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        report(exc, None)
    assert "Traceback" in capsys.readouterr().err


# -- the Export page's "save into a folder on the server" ----------------------------------------------
def test_the_export_page_refuses_a_symlinked_folder_and_says_when_it_replaces(db_path, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TUNELAB_DB", str(db_path))  # seeded with the demo studies, measured
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "export.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    at.text_input(key="export_folder").input(str(tmp_path / "link")).run()
    at.button(key="export_save").click().run()
    assert len(at.error) == 1 and "symbolic link" in at.error[0].value
    assert list(real.iterdir()) == []
    at.text_input(key="export_folder").input(str(real)).run()
    at.button(key="export_save").click().run()
    assert not at.error and "replaced" not in at.success[-1].value
    at.button(key="export_save").click().run()
    assert not at.error and "replaced the existing file" in at.success[-1].value
    assert len(list(real.iterdir())) == 1


# -- the Studies page's uploads: read from memory, refusals name the user's file --------------------------
KT_CACHE = json.dumps({"tune_params_keys": ["bx"], "tune_params": {"bx": [16, 32]}, "objective": "time", "cache": {
    "16": {"bx": 16, "time": 1.5}, "32": {"bx": 32, "time": 1.2}}})
#: 300 bytes of UTF-8 (150 characters): a file name Windows and macOS allow, more than Linux allows (255 bytes).
LONG = "é" * 150
UPLOADERS = {"table_upload": ("A table (CSV)", "import_table"), "kt_upload": ("A Kernel Tuner cache", "import_kt"),
             "spec_upload": ("A spec file (YAML or TOML)", "create_from_file")}


def studies_page_with_upload(db: Path, monkeypatch: pytest.MonkeyPatch, key: str, filename: str, data: bytes):
    """The Studies page with ``filename`` (holding ``data``) in the uploader ``key``, its button pressed. AppTest
    cannot upload, so the uploader hands over a named in-memory file, which is what Streamlit's UploadedFile is."""
    import io

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    class Upload(io.BytesIO):
        name = ""

    def uploader(label: str, *args: object, key: str | None = None, **kwargs: object) -> Upload | None:
        if key != wanted:
            return None
        upload = Upload(data)
        upload.name = filename
        return upload

    wanted = key
    monkeypatch.setattr(st, "file_uploader", uploader)
    monkeypatch.setenv("TUNELAB_DB", str(db))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "studies.py"), default_timeout=60).run()
    tab, button = UPLOADERS[key]
    if key == "spec_upload":
        at.radio(key="new_source").set_value(tab).run()
    elif key == "table_upload":
        at.text_input(key="table_name").input("uploaded").run()
    else:
        at.text_input(key="kt_name").input("uploaded").run()
    at.button(key=button).click().run()
    assert not at.exception
    return at


@pytest.mark.parametrize(("key", "filename", "data"), [
    ("table_upload", f"{LONG}.csv", b"bx,time\n16,1.5\n32,1.2\n"),
    ("kt_upload", f"{LONG}.json", KT_CACHE.encode()),
])
def test_an_upload_with_a_long_name_imports_without_a_temporary_copy(db_path, monkeypatch, key, filename, data):
    """The page used to copy an upload to /tmp/tunelab-upload-…/<its name>: a name over 255 bytes failed there,
    in an error naming that temporary path."""
    at = studies_page_with_upload(db_path, monkeypatch, key, filename, data)
    assert not at.error and at.success[0].value.startswith("Imported 'uploaded'"), [e.value for e in at.error]
    assert at.session_state["study"] == "uploaded"


@pytest.mark.parametrize(("key", "filename", "data", "needle"), [
    ("table_upload", "my table.csv", b"bx,time\n16,fast\n32,1.2\n", "'fast' is not a number"),
    ("kt_upload", "my cache.json", b"[1, 2]", "expected a JSON object"),
    ("spec_upload", "my spec.yaml", b"name: [unclosed\n", "malformed YAML"),
    ("spec_upload", "my spec.toml", b"name = \n", "malformed TOML"),
])
def test_a_refused_upload_is_named_as_the_user_named_it(db_path, monkeypatch, key, filename, data, needle):
    at = studies_page_with_upload(db_path, monkeypatch, key, filename, data)
    assert len(at.error) == 1 and filename in at.error[0].value and needle in at.error[0].value, at.error
    assert "/tmp" not in at.error[0].value and "tunelab-upload" not in at.error[0].value
