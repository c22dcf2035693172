"""The DiffTune harness run directly (past ``measure.refusal()``), as the hostile-block tests and the
harness fuzz target need it: one block, a working folder, a session of its own, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any


def session_members(sid: int) -> list[str]:
    """Command lines of live processes in session ``sid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid:  # after "pid (comm)": state, ppid, pgrp, session
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, IndexError):
            continue
    return found


def run_direct(binary: Path, folder: Path, block: str, unroll: int = 1, repeats: int = 2,
               timeout_ms: int = 300) -> dict[str, Any]:
    """The harness's one record for ``block``, run in ``folder`` in a session of its own; asserts that the
    answer is one line of JSON and that nothing of the session is left running."""
    proc = subprocess.Popen([str(binary), "--timeout-ms", str(timeout_ms), block, str(unroll), str(repeats)],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        survivors = session_members(proc.pid)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert survivors == [], survivors
    lines = out.splitlines()
    assert len(lines) == 1 and proc.returncode == 0, (out, err)
    record: dict[str, Any] = json.loads(lines[0])
    assert "\n" not in record["detail"]
    return record
