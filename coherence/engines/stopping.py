"""Stopping a search cleanly: signals, time and memory limits, one wording for every engine.

NOTE(partial-results): an interrupted or limited search is not an error: every engine stops
at a point where its visited states are consistent and returns what it found, with
``RawResult.stopped`` saying why (exit code 3 unless a failure was found).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


def interrupted(signum: int) -> str:
    return f"interrupted ({SIGNAL_NAMES.get(signal.Signals(signum), str(signum))})"


def time_limit_reached(seconds: float) -> str:
    return f"--time-limit {seconds:g} s reached"


def memory_limit_reached(limit: int) -> str:
    return f"--memory-limit {limit / 2**20:,.0f} MiB reached"


class StopOnSignals:
    """While active, SIGINT and SIGTERM call ``stop(signum)`` instead of killing the search
    (only the main thread can install handlers; elsewhere this does nothing)."""

    def __init__(self, stop: Callable[[int], None]) -> None:
        self.stop = stop
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.stop(signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved.clear()


class StopRequest:
    """A flag set from a signal handler and read by the search loop."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self, signum: int) -> None:
        if self.reason is None:
            self.reason = interrupted(signum)
