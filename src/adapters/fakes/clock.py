"""FakeClock: virtual time; sleep() returns at once and moves the clock forward."""

from __future__ import annotations

import threading

__all__ = [
    "FakeClock",
]


class FakeClock:
    """A Clock whose time only moves when told to (or when something sleeps on it)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._mono = 0.0
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        self.sleeps.append(seconds)

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by `seconds`."""
        with self._lock:
            self._now += seconds
            self._mono += seconds
