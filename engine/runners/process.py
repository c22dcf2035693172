"""Run a program as an argument list (never through a shell), in its own process group.

A timeout kills the whole group, so a benchmark script that started helpers leaves no orphan
behind; the output gathered before the kill is kept for the error message.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.runners.base import MeasureError

#: Seconds to wait for pipes to close after the group was killed (a process that left the group
#: with setsid could hold them open forever).
_DRAIN_S = 5.0


@dataclass(frozen=True)
class ProcessOutcome:
    argv: tuple[str, ...]
    pid: int
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group (ignoring a group that is already gone)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(
    argv: Sequence[str],
    *,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | None = None,
) -> ProcessOutcome:
    """Run ``argv`` to completion or until ``timeout`` seconds, then kill its process group."""
    argv = tuple(str(a) for a in argv)
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(env) if env is not None else None, cwd=cwd, text=True,
            errors="replace", start_new_session=True,
        )
    except FileNotFoundError:
        raise MeasureError("failed", f"program not found: {argv[0]}") from None
    except NotADirectoryError:
        raise MeasureError("failed", f"working directory is not a folder: {cwd}") from None
    except PermissionError:
        raise MeasureError("failed", f"permission denied running {argv[0]}") from None
    timed_out = False
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=_DRAIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = "", ""
    except BaseException:  # interrupted (Ctrl-C, a cancelled worker): take the group down with us
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        if proc.returncode is None:
            proc.wait()
    return ProcessOutcome(argv, proc.pid, None if timed_out else proc.returncode, out or "", err or "",
                          time.perf_counter() - started, timed_out)


def tail(text: str, lines: int = 15, chars: int = 2000) -> str:
    """The last lines of a program's output, for an error message that fits in a table cell."""
    kept = "\n".join(text.strip().splitlines()[-lines:])
    return kept[-chars:]


def check_outcome(outcome: ProcessOutcome, timeout: float | None, what: str) -> None:
    """Turn a timeout or a non-zero exit into a :class:`MeasureError` naming ``what``."""
    if outcome.timed_out:
        raise MeasureError("timeout", f"{what} killed after {timeout:g} s (timeout)")
    if outcome.returncode != 0:
        code = outcome.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        message = tail(outcome.stderr) or tail(outcome.stdout) or "(no output)"
        raise MeasureError("failed", f"{what} failed ({how}): {message}")
