"""SIGTERM and SIGHUP stop a command the way Ctrl-C does.

The handler raises :class:`Terminated` (a ``KeyboardInterrupt``) in the main thread, so the same
clean-up runs as for Ctrl-C: a campaign cancels its queued tasks, the executor terminates its
workers and what they measure, the store is closed. Without it SIGTERM ended the process at once
and left the pool's workers running.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextmanager
def stop_on_signals(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Within the block (main thread only), ``signals`` raise :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
