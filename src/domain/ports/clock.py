"""Clock port: wall time, monotonic time and sleeping, so tests can run on virtual time."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = [
    "Clock",
]


@runtime_checkable
class Clock(Protocol):
    """Time as the use cases see it. Never call time.* directly outside the adapter."""

    def now(self) -> float:
        """Seconds since the epoch (wall clock), for timestamps and ages."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards, for deadlines."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` (the fake advances virtual time instead)."""
        ...
