"""Two-stage Ctrl-C for the duration of a run (SIGINT and SIGTERM).

The first signal asks the run to stop streaming, clean up, sweep and exit 130; the second
abandons everything at once, and says what became of the resource: left running (the delete was
never sent, or failed), being deleted (the DELETE was in flight), or deleted (only the sweep was
cut short). Handlers are installed only while a
run is in progress, only from the main thread, and restored afterwards.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from .run_cleanup import Removal


class Abandoned(BaseException):
    """Raised in the main thread by the second interrupt: leave now, clean up nothing."""


class TwoStageInterrupt:
    """Counts interrupts; the first calls `on_first`, the second `on_second` and raises Abandoned."""

    def __init__(self, *, on_first: Callable[[], None], on_second: Callable[[], None]) -> None:
        self._on_first = on_first
        self._on_second = on_second
        self.count = 0
        self.first = threading.Event()
        self.abandon_allowed = True  # False once the run is over: a late signal changes nothing

    def trigger(self) -> None:
        """What a signal does; callable directly (tests, other threads use `interrupt`)."""
        self.count += 1
        if self.count == 1:
            self.first.set()
            self._on_first()
            return
        if self.abandon_allowed:
            self._on_second()
            raise Abandoned()

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.trigger()

    @contextmanager
    def installed(self) -> Iterator[TwoStageInterrupt]:
        """Install for SIGINT and SIGTERM while the block runs (no-op off the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in previous:
            signal.signal(sig, self._handler)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def abandon_messages(*, kind: str, name: str, namespace: str, removal: Removal) -> tuple[str, str]:
    """(the stderr line at the second Ctrl-C, the final error) for what really happened."""
    if removal is Removal.IN_FLIGHT:
        return (
            f"leaving while {kind} {name} is being deleted (its answer not awaited, so it may "
            f"be gone already); check with: kubectl get {kind} {name} -n {namespace}, "
            f"and if it is still there: kubectl delete {kind} {name} -n {namespace}",
            f"interrupted while deleting {kind} {name}",
        )
    if removal is Removal.DONE:
        return (
            f"leaving; {kind} {name} was already deleted (the orphan sweep was cut short)",
            f"interrupted; {kind} {name} deleted",
        )
    if removal is Removal.KEPT:
        return (
            f"leaving; {kind} {name} is kept in namespace {namespace}",
            f"interrupted; {kind} {name} kept",
        )
    return (
        f"leaving {kind} {name} running in namespace {namespace}; "
        f"delete it with: kubectl delete {kind} {name} -n {namespace}",
        f"interrupted; {kind} {name} left running",
    )
