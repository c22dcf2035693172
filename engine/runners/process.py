"""Run a program as an argument list (never through a shell), and leave nothing of it running.

* **Its own session**, marked: the child starts a new session and carries a random marker in its
  environment (``TUNELAB_RUN_MARK``). When the run ends — normally, at its timeout, or because the
  caller was interrupted — the whole process group is killed, and so is every process that still
  carries the marker: a helper that escaped the group with ``setsid`` or a double fork is found
  through the environment it inherited.
* **Dies with its parent**: on Linux the child gets SIGKILL when the thread that started it dies
  (``PR_SET_PDEATHSIG``), so a worker killed with ``kill -9`` takes its measurement with it.
  :func:`kill_running` ends every run of this process at once (a worker's SIGTERM handler).
* **Bounded output**: stdout and stderr are read in chunks and only the first and last
  :data:`OUTPUT_KEEP` bytes of each are kept, so a program that prints gigabytes cannot exhaust
  memory; what was dropped is counted in :attr:`ProcessOutcome.dropped`.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.runners.base import MeasureError

#: Environment variable that marks every process a run started (and their descendants).
MARK_VAR = "TUNELAB_RUN_MARK"
#: Bytes kept from the start and from the end of each output stream.
OUTPUT_KEEP = 64 * 1024
#: Seconds to wait for pipes to close after the run's processes were killed (a process that left
#: the group and scrubbed its environment could hold them open forever).
_DRAIN_S = 5.0
_CHUNK = 64 * 1024
_PR_SET_PDEATHSIG = 1
_TRUNCATED = b"\n[... output truncated: the middle was not kept ...]\n"

#: pid -> marker of the runs this process started that have not been cleaned up yet.
_RUNNING: dict[int, str] = {}
_RUNNING_LOCK = threading.RLock()  # re-entrant: a SIGTERM handler may run while this thread holds it


@dataclass(frozen=True)
class ProcessOutcome:
    argv: tuple[str, ...]
    pid: int
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    #: Output bytes not kept (beyond the first and last OUTPUT_KEEP of each stream).
    dropped: int = 0


# -- dying together --------------------------------------------------------------------------------
def _load_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


#: libc's prctl, looked up once here: a forked child about to exec should do as little as possible.
_PRCTL = _load_prctl()


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when the thread that started it dies (Linux);
    False where that is not available."""
    return _PRCTL is not None and _PRCTL(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def _child_setup(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: die with the starting thread, and at once if the parent is already gone."""

    def setup() -> None:
        die_with_parent()
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


# -- finding and killing what a run left --------------------------------------------------------------
def _alive(pid: int) -> bool:
    """Running or sleeping (a zombie is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Children, grandchildren, … of ``pid`` still attached to it (from /proc/PID/task/*/children)."""
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                if child not in found:
                    found.append(child)
                    stack.append(child)
    return found


def marked(marker: str, var: str = MARK_VAR) -> list[int]:
    """Live processes whose environment carries ``var=marker`` (those this user may read)."""
    needle = f"{var}={marker}".encode()
    own = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _signal(pid: int, sig: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group (ignoring a group that is already gone)."""
    _signal(pgid, signal.SIGKILL, group=True)


def kill_tree(pid: int, marker: str | None) -> None:
    """SIGKILL the group led by ``pid``, its descendants, and every process carrying ``marker``;
    repeated until a pass finds nothing alive (a process may fork while the first pass runs)."""
    for _ in range(10):
        targets = set(descendants(pid)) | (set(marked(marker)) if marker else set())
        kill_group(pid)
        for target in targets:
            _signal(target, signal.SIGKILL)
        if not any(_alive(t) for t in targets):
            return
        time.sleep(0.02)


def _track(pid: int, marker: str) -> None:
    with _RUNNING_LOCK:
        _RUNNING[pid] = marker


def _untrack(pid: int) -> None:
    with _RUNNING_LOCK:
        _RUNNING.pop(pid, None)


def kill_running() -> None:
    """Kill every run (and sandbox) this process started that is still going: for a worker that
    must stop now (SIGTERM, or the process that owns it died)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.items())
    for pid, marker in running:
        kill_tree(pid, marker)


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, **popen: Any) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``argv`` marked, in its own session, dying with this thread; returns it and its marker.
    The caller ends it with :func:`finish`."""
    marker = secrets.token_hex(8)
    child_env = {**(os.environ if env is None else env), MARK_VAR: marker}
    proc = subprocess.Popen(list(argv), env=child_env, start_new_session=True, preexec_fn=_child_setup(os.getpid()),
                            **popen)
    _track(proc.pid, marker)
    return proc, marker


def exited(proc: subprocess.Popen[bytes], deadline: float | None) -> bool:
    """Wait until ``proc`` exits (True) or ``deadline`` passes (False) *without reaping it*: its pid
    stays reserved, so the clean-up after it cannot hit a stranger that reused the number."""
    pause = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # already reaped
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause if deadline is None else max(min(pause, deadline - time.monotonic()), 0))
        pause = min(pause * 2, 0.05)


def finish(proc: subprocess.Popen[bytes], marker: str) -> None:
    """Kill whatever is left of a run started by :func:`spawn` and reap it."""
    try:
        kill_tree(proc.pid, marker)
        proc.wait()
    finally:
        _untrack(proc.pid)


# -- reading output --------------------------------------------------------------------------------
class _Capture:
    """The first and last ``keep`` bytes of a stream; the middle is counted, not kept."""

    def __init__(self, keep: int = OUTPUT_KEEP) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.keep
            if excess > 0:
                self.dropped += excess
                del self.tail[:excess]

    def text(self) -> str:
        data = bytes(self.head) + (_TRUNCATED if self.dropped else b"") + bytes(self.tail)
        return data.decode("utf-8", errors="replace")


class _Pipes:
    """A child's stdin (fed from a buffer) and its stdout/stderr (read in chunks into captures)."""

    def __init__(self, proc: subprocess.Popen[bytes], data: bytes | None) -> None:
        self.out, self.err = _Capture(), _Capture()
        assert proc.stdout is not None and proc.stderr is not None  # spawned with stdout=PIPE, stderr=PIPE
        self._reading = {proc.stdout.fileno(): self.out, proc.stderr.fileno(): self.err}
        self._stdin = proc.stdin
        self._pending = memoryview(data or b"")
        if self._stdin is not None:
            os.set_blocking(self._stdin.fileno(), False)
            if not self._pending:
                self.stop_writing()

    def stop_writing(self) -> None:
        if self._stdin is not None and not self._stdin.closed:
            self._stdin.close()
        self._pending = memoryview(b"")

    def pump(self, deadline: float | None) -> bool:
        """Until stdout and stderr both close (True) or ``deadline`` passes (False)."""
        with selectors.DefaultSelector() as selector:
            for fd in self._reading:
                selector.register(fd, selectors.EVENT_READ)
            if self._pending:
                assert self._stdin is not None  # data to write means stdin is a pipe
                selector.register(self._stdin.fileno(), selectors.EVENT_WRITE)
            while any(fd in self._reading for fd in selector.get_map()):
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return False
                for key, _ in selector.select(wait):
                    if key.fd in self._reading:
                        chunk = os.read(key.fd, _CHUNK)
                        if chunk:
                            self._reading[key.fd].add(chunk)
                        else:
                            selector.unregister(key.fd)
                            del self._reading[key.fd]
                    elif self._write(key.fd):
                        selector.unregister(key.fd)
        return True

    def _write(self, fd: int) -> bool:
        """Write the next chunk of stdin; True once there is nothing more to write."""
        try:
            self._pending = self._pending[os.write(fd, self._pending[:_CHUNK]):]
        except BlockingIOError:
            return False
        except BrokenPipeError:  # the program does not read its input: fine
            self._pending = memoryview(b"")
        if not self._pending:
            self.stop_writing()
            return True
        return False


def run_process(
    argv: Sequence[str],
    *,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | None = None,
) -> ProcessOutcome:
    """Run ``argv`` to completion or until ``timeout`` seconds; then kill whatever of it is left."""
    argv = tuple(str(a) for a in argv)
    started = time.perf_counter()
    try:
        proc, marker = spawn(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise MeasureError("failed", f"program not found: {argv[0]}") from None
    except NotADirectoryError:
        raise MeasureError("failed", f"working directory is not a folder: {cwd}") from None
    except PermissionError:
        raise MeasureError("failed", f"permission denied running {argv[0]}") from None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        pipes = _Pipes(proc, None if stdin is None else stdin.encode("utf-8", errors="replace"))
        timed_out = not pipes.pump(deadline)
        if not timed_out:  # the pipes closed; the program may still be running
            timed_out = not exited(proc, deadline)
        if timed_out:  # kill first, then read what is left (for the error message), briefly
            kill_tree(proc.pid, marker)
            pipes.stop_writing()
            pipes.pump(time.monotonic() + _DRAIN_S)
    finally:  # also when interrupted (Ctrl-C, SIGTERM, a cancelled worker): take everything down with us
        finish(proc, marker)
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            if stream is not None:
                stream.close()
    out, err = pipes.out, pipes.err
    return ProcessOutcome(argv, proc.pid, None if timed_out else proc.returncode, out.text(), err.text(),
                          time.perf_counter() - started, timed_out, out.dropped + err.dropped)


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
