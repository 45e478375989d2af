"""FakeCluster's virtual time: steps due at given times, applied in order as the clock moves.

A step is either a state change (runs under the cluster's lock, with `now` reading the step's own
time) or a hook (a user callable, run outside the lock so it may call the cluster). Waiting
callers either move the clock to the next step themselves (auto-advance) or wait for someone else
to move it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

Action = Callable[[float], None]
Hook = Callable[[], object]


class SteppableClock(Protocol):
    """What FakeCluster needs from a clock: FakeClock satisfies it."""

    def now(self) -> float: ...

    def advance(self, seconds: float) -> None: ...


@dataclass(order=True)
class _Scheduled:
    due: float
    seq: int
    action: Action | None = field(compare=False)  # runs under the lock
    hook: Hook | None = field(compare=False, default=None)  # runs outside it


class VirtualSchedule:
    """The queue of scheduled steps over a clock, guarded by the cluster's condition."""

    def __init__(self, clock: SteppableClock, cond: threading.Condition) -> None:
        self.clock = clock
        self._cond = cond
        self._queue: list[_Scheduled] = []
        self._seq = itertools.count()
        self._step_time: float | None = None  # virtual time of the step being applied

    def now(self) -> float:
        """Virtual time of the step being applied, else the clock."""
        return self.clock.now() if self._step_time is None else self._step_time

    @property
    def pending(self) -> bool:
        return bool(self._queue)

    def push(self, due: float, action: Action | None, hook: Hook | None = None) -> None:
        heapq.heappush(self._queue, _Scheduled(due, next(self._seq), action, hook))

    def apply_due_locked(self, until: float) -> Hook | None:
        """Apply due state steps in order; stop at (and return) the first due hook."""
        while self._queue and self._queue[0].due <= until:
            item = heapq.heappop(self._queue)
            if item.hook is not None:
                return item.hook
            if item.action is not None:
                self._step_time = item.due
                try:
                    item.action(item.due)
                finally:
                    self._step_time = None
        return None

    def catch_up(self) -> None:
        """Apply whatever fell due while the clock moved on without us."""
        while True:
            with self._cond:
                hook = self.apply_due_locked(self.clock.now())
            if hook is None:
                return
            hook()

    def step_forward_locked(self, deadline: float) -> tuple[bool, Hook | None]:
        """Move the clock to the next scheduled step before `deadline` (True), else to it (False)."""
        now = self.clock.now()
        if self._queue and self._queue[0].due <= deadline:
            due = self._queue[0].due
            if due > now:
                self.clock.advance(due - now)
            hook = self.apply_due_locked(max(due, now))
            self._cond.notify_all()
            return True, hook
        if deadline != float("inf") and deadline > now:
            self.clock.advance(deadline - now)
            self._cond.notify_all()
        return False, None

    def advance(self, seconds: float) -> None:
        """Move time forward step by step, so hooks see the clock at their own time."""
        with self._cond:
            target = self.clock.now() + seconds
        while True:
            with self._cond:
                moved, hook = self.step_forward_locked(target)
                self._cond.notify_all()  # waiters re-check their virtual deadlines
            if hook is not None:
                hook()
            if not moved:
                return
