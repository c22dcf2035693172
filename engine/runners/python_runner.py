"""PythonRunner: measure a Python callable named by its import path (``package.module:function``).

The callable is imported (never evaluated from text) and called with the configuration as a dict.
``mode: return`` (default): it returns the metric, or a mapping with ``value`` (and optionally
``status``, ``error`` and other keys kept as metadata). ``mode: time``: the runner times the call
with a monotonic clock and ignores what it returns, except for the correctness check, a callable
``check(config, output) -> bool`` also named by import path.

Timeout: with a ``timeout`` (the default is 60 s) the callable runs in a *sandbox*, a child process
started once per runner and thread that imports it and serves calls; a call that does not answer
in time is stopped from outside by killing the sandbox and everything it started, so even code
spinning in C (a regular expression backtracking, a native library call) cannot outlive its
timeout, whatever the executor. The next call starts a fresh sandbox. The sandbox keeps state
between calls like the calling process would (warm-ups warm it), and dies with the thread that
started it. With ``timeout: null`` the callable runs in the calling process, untimed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import IO, Any, NoReturn

from engine.errors import UserError
from engine.runners.base import MeasureError, Runner, Trial, bounded_metadata, check_options, finite_value, plain
from engine.runners.process import finish, spawn

MODES = ("return", "time")
#: Seconds a sandbox may take to start and import the callable (not part of any call's timeout).
START_S = 60.0
#: Seconds past the timeout the runner waits for a call's answer before it kills the sandbox (the
#: sandbox times the call itself; this only covers passing the answer back).
GRACE_S = 1.0
#: Largest answer a sandbox may send (metadata is bounded before it is sent).
_MAX_MESSAGE = 16 * 1024 * 1024
_ROOT = str(Path(__file__).resolve().parents[2])
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from engine.runners.python_runner import serve; serve()"


def resolve(target: str, what: str, path: str | None = None) -> Callable[..., Any]:
    """The callable at ``module:attr`` (or ``module.attr``); a one-line error if it is not there."""
    if not isinstance(target, str) or not target.strip():
        raise UserError(f"{what}: expected an import path like 'package.module:function', got {target!r}")
    module_name, sep, attr = target.partition(":")
    if not sep:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise UserError(f"{what}: {target!r} is not 'package.module:function'")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"{what}: cannot import module {module_name!r} ({exc})") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"{what}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UserError(f"{what}: {target!r} is not callable")
    return obj


@contextmanager
def alarm(seconds: float | None) -> Iterator[None]:
    """Raise a 'timeout' MeasureError in the main thread after ``seconds`` (no-op elsewhere).

    Only interrupts Python code: a call blocked in C returns first. The Python runner uses a sandbox
    process instead; this stays for runners whose work must stay in-process (a GPU context)."""
    usable = seconds is not None and threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM")
    if not usable:
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> NoReturn:
        raise MeasureError("timeout", f"call interrupted after {seconds:g} s (timeout)")

    assert seconds is not None  # implied by usable
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def value_of(output: Any, metadata: dict[str, Any]) -> float:
    """The metric in a callable's return value; extra mapping keys go to ``metadata``."""
    if isinstance(output, Mapping):
        status = output.get("status", "ok")
        if status != "ok":
            raise MeasureError(status if status in ("failed", "timeout", "invalid") else "failed",
                               str(output.get("error") or f"callable reported status {status!r}"))
        metadata.update({k: v for k, v in output.items() if k not in ("value", "status", "error")})
        output = output.get("value")
    return finite_value(output)


class _Call:
    """One resolved callable (and check) and how to read its result: the same in the calling
    process and in a sandbox."""

    def __init__(self, target: str, check: Any, mode: str, path: str | None) -> None:
        self.function = resolve(target, "runner 'python': callable", path)
        self.check_name = check if isinstance(check, str) else None
        self.checker = resolve(check, "runner 'python': check", path) if self.check_name else None
        self.mode = mode

    def __call__(self, config: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
        """(value, seconds the call took, metadata); a failed call raises MeasureError."""
        began = time.perf_counter()
        output = self.function(dict(config))
        elapsed = time.perf_counter() - began
        if self.checker is not None and not self.checker(dict(config), output):
            raise MeasureError("failed", f"correctness check {self.check_name} rejected the output")
        metadata: dict[str, Any] = {}
        value = elapsed if self.mode == "time" else value_of(output, metadata)
        return value, elapsed, metadata


# -- the sandbox: messages are 8-byte lengths + pickles over the child's stdin/stdout -------------------
def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(8, "big") + data)
    stream.flush()


def _read(fd: int, size: int, deadline: float | None) -> bytes | None:
    """``size`` bytes from ``fd``; None once ``deadline`` passed; EOFError when the writer is gone."""
    data = bytearray()
    while len(data) < size:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            return None
        if not select.select([fd], [], [], wait)[0]:
            continue
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _receive(fd: int, deadline: float | None) -> Any:
    header = _read(fd, 8, deadline)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    if size > _MAX_MESSAGE:
        raise EOFError  # not a message this protocol sends: treat the sandbox as broken
    body = _read(fd, size, deadline)
    return None if body is None else pickle.loads(body)


def serve() -> None:
    """The sandbox's main loop (in the child): set up from the first message, then answer each call.

    Replies go to the original stdout; the callable's own prints are sent to stderr."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.fileno()
    call: _Call | None = None
    while True:
        try:
            message = _receive(requests, None)
        except EOFError:  # the runner is gone
            return
        try:
            if message[0] == "setup":
                _, search_path, target, check, mode, path = message
                sys.path.extend(p for p in search_path if p not in sys.path)
                call = _Call(target, check, mode, path)
                reply: tuple[Any, ...] = ("ready",)
            else:
                assert call is not None  # the runner sends "setup" first
                value, elapsed, metadata = call(message[1])
                reply = ("ok", value, elapsed, json.loads(json.dumps(bounded_metadata(metadata), default=plain)))
        except MeasureError as exc:
            reply = ("error", exc.status, exc.error)
        except Exception as exc:  # noqa: BLE001 - the callable's bug is this configuration's failed result
            reply = ("error", "failed", f"{type(exc).__name__}: {exc}")
        _send(replies, reply)


class _Sandbox:
    """The runner's side of one sandbox process."""

    def __init__(self, setup: tuple[Any, ...]) -> None:
        self.proc, self.marker = spawn([sys.executable, "-c", _BOOT, _ROOT], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE)
        try:
            self.ask(("setup", *setup), START_S, "starting the callable's process")
        except BaseException:
            self.close()
            raise

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, message: tuple[Any, ...], seconds: float, doing: str, limit: float | None = None) -> tuple[Any, ...]:
        """Send ``message`` and return the answer; past ``seconds`` the sandbox is killed (a timeout
        of ``limit`` seconds, as the message says)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None  # spawned with both piped
        try:
            _send(self.proc.stdin, message)
            reply: tuple[Any, ...] | None = _receive(self.proc.stdout.fileno(), time.monotonic() + seconds)
        except (EOFError, OSError, pickle.UnpicklingError):
            self.close()
            code = self.proc.returncode
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            raise MeasureError("failed", f"the callable's worker process died while {doing} ({how})") from None
        if reply is None:
            self.close()
            raise MeasureError("timeout", f"no answer within {limit or seconds:g} s while {doing} (timeout); "
                                          "its process and everything it started were killed")
        if reply[0] == "error":
            raise MeasureError(reply[1], reply[2])
        return reply

    def __del__(self) -> None:
        """A dropped sandbox takes its process with it. Left to the garbage collector, a ``Popen`` whose
        child still runs is kept alive (CPython's zombie list) with its stdin open, so the child never
        sees EOF: whether it ended depended on the order objects happened to be freed in."""
        if hasattr(self, "proc"):
            with contextlib.suppress(Exception):  # at interpreter exit, modules may already be gone
                self.close()

    def close(self) -> None:
        """Kill the sandbox and everything it started (idempotent)."""
        for stream in (self.proc.stdin, self.proc.stdout):
            assert stream is not None  # spawned with both piped
            try:
                stream.close()
            except OSError:
                pass
        finish(self.proc, self.marker)


class PythonRunner(Runner):
    kind = "python"
    OPTIONS = ("callable", "mode", "path")

    def __init__(self, target: str, *, mode: str = "return", path: str | None = None, **common: Any) -> None:
        super().__init__(**common)
        if mode not in MODES:
            raise UserError(f"runner 'python': mode {mode!r} must be one of {', '.join(MODES)}")
        self.target, self.mode, self.path = target, mode, path
        resolve(target, "runner 'python': callable", path)  # fail at once, in one line, when it is wrong
        if isinstance(self.check, str):
            resolve(self.check, "runner 'python': check", path)
        self._sandboxes: dict[int, _Sandbox] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_sandboxes": {}}  # processes stay with the process that started them

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **_: object) -> PythonRunner:
        check_options(spec, cls.OPTIONS, cls.kind)
        if "callable" not in spec:
            raise UserError("runner 'python': needs 'callable' ('package.module:function')")
        return cls(spec["callable"], mode=spec.get("mode", "return"), path=spec.get("path"), **cls.common(spec))

    def _sandbox(self) -> _Sandbox:
        """This thread's sandbox (a sandbox dies with the thread that started it)."""
        key = threading.get_native_id()
        box = self._sandboxes.get(key)
        if box is None or not box.alive():
            if box is not None:
                box.close()
            box = self._sandboxes[key] = _Sandbox((list(sys.path), self.target, self.check if isinstance(self.check, str)
                                                   else None, self.mode, self.path))
        return box

    def _sandboxed(self, config: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
        assert self.timeout is not None  # the sandbox is only used with a timeout
        key = threading.get_native_id()
        try:
            _, value, elapsed, metadata = self._sandbox().ask(("call", config), self.timeout + GRACE_S, "calling it",
                                                              self.timeout)
        except MeasureError:
            box = self._sandboxes.get(key)
            if box is not None and not box.alive():
                del self._sandboxes[key]
            raise
        return value, elapsed, metadata

    def _run(self, config: dict[str, Any], repeats: int, start: int) -> Trial:
        call = self._sandboxed if self.timeout is not None else _Call(self.target, self.check, self.mode, self.path)
        trial = Trial(metadata={"callable": self.target})

        def once() -> float:
            value, elapsed, metadata = call(dict(config))
            if self.timeout is not None and elapsed > self.timeout:
                raise MeasureError("timeout", f"call took {elapsed:.3g} s, more than the {self.timeout:g} s timeout")
            trial.metadata.update(metadata)
            return value

        measured = self.repeat_calls(once, repeats)
        measured.metadata.update(trial.metadata)
        return measured
