"""Two-stage Ctrl-C for the duration of a run (SIGINT and SIGTERM).

The first signal asks the run to stop streaming, clean up, sweep and exit 130; a deliberate second
Ctrl-C abandons everything at once, and says what became of the resource: left running (the delete
was never sent, or failed), being deleted (the DELETE was in flight), or deleted (only the sweep was
cut short). Handlers are installed only while a run is in progress, only from the main thread, and
restored afterwards.

Only a deliberate second Ctrl-C may abandon the cleanup (see `abandons`): the same interrupt is
often delivered twice within microseconds (GNU timeout signals its child and then its process
group; a CI runner signals the whole group while a wrapper forwards the signal too), and a
resource left Running is never swept. So a SIGINT within REPEAT_WINDOW_SECONDS of the first
interrupt counts as that interrupt again, and SIGTERM (what `kill`, `timeout`, CI runners and
Kubernetes itself send to stop a process) never abandons: it always lets the cleanup finish.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from .run_cleanup import Removal

# Far longer than any duplicate delivery (microseconds to milliseconds, also on a loaded CI
# machine), short enough that a person who read "press Ctrl-C again" is never ignored twice.
REPEAT_WINDOW_SECONDS = 1.0


class Abandoned(BaseException):
    """Raised in the main thread by the second interrupt: leave now, clean up nothing."""


def abandons(signum: int, *, since_first: float, window: float = REPEAT_WINDOW_SECONDS) -> bool:
    """Whether a signal arriving `since_first` seconds after the run's first interrupt abandons
    the cleanup: only a SIGINT, and only once the repeat window has passed."""
    return signum == signal.SIGINT and since_first >= window


class TwoStageInterrupt:
    """Counts interrupts; the first calls `on_first`; a deliberate second one (`abandons`) calls
    `on_second` and raises Abandoned; any other one calls `on_repeat` and changes nothing."""

    def __init__(
        self,
        *,
        on_first: Callable[[], None],
        on_second: Callable[[], None],
        on_repeat: Callable[[int], None] = lambda signum: None,
        monotonic: Callable[[], float] = time.monotonic,
        repeat_window: float = REPEAT_WINDOW_SECONDS,
    ) -> None:
        self._on_first = on_first
        self._on_second = on_second
        self._on_repeat = on_repeat  # told the signal of each repeat that does not abandon
        # Real time, never a test's virtual clock: it measures when the kernel delivered signals.
        self._monotonic = monotonic
        self._repeat_window = repeat_window
        self._first_at = 0.0
        self.count = 0
        self.ignored = 0  # repeats that did not abandon (a duplicate delivery, or a SIGTERM)
        self.first = threading.Event()
        self.abandon_allowed = True  # False once the run is over: a late signal changes nothing

    def trigger(self, signum: int = signal.SIGINT) -> None:
        """What a signal does; callable directly (tests, other threads use `interrupt`)."""
        now = self._monotonic()
        self.count += 1
        if self.count == 1:
            self._first_at = now
            self.first.set()
            self._on_first()
            return
        if not self.abandon_allowed:
            return
        if not abandons(signum, since_first=now - self._first_at, window=self._repeat_window):
            self.ignored += 1
            self._on_repeat(signum)
            return
        self._on_second()
        raise Abandoned()

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.trigger(signum)

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
