"""Watches on FakeCluster: the initial state, then the history as a selective watch sees it."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any

from pegboard.domain.ports.cluster import JsonObject, WatchEvent

from .store import Change, FakeStore, clone
from .virtual_time import VirtualSchedule


def seen_as(entry: Change, kind: str, matches: Callable[[Any], bool]) -> str | None:
    """The event type a filtered watch sees: objects moving in or out of the selection."""
    if entry.kind != kind:
        return None
    now_in = matches(entry.new)
    if entry.type != "MODIFIED":
        return entry.type if now_in else None
    was_in = entry.old is not None and matches(entry.old)
    if now_in and was_in:
        return "MODIFIED"
    if now_in:
        return "ADDED"
    return "DELETED" if was_in else None


def watch_events(
    store: FakeStore,
    schedule: VirtualSchedule,
    *,
    kind: str,
    matches: Callable[[Any], bool],
    initial: builtins.list[JsonObject],
    index: int,
    deadline: float,
    auto_advance: bool,
) -> Iterator[WatchEvent]:
    """ADDED for each initial object, then changes from history[index] until the deadline."""
    for obj in initial:
        yield WatchEvent("ADDED", obj)
    history = store.history
    while True:
        pending: builtins.list[WatchEvent] = []
        hook = None
        with store.cond:
            while index < len(history) and not pending:
                entry = history[index]
                if entry.time > deadline:
                    return
                index += 1
                event_type = seen_as(entry, kind, matches)
                if event_type is not None:
                    pending.append(WatchEvent(event_type, clone(entry.new)))
            if not pending:
                if schedule.clock.now() >= deadline:
                    return
                if auto_advance:
                    _, hook = schedule.step_forward_locked(deadline)
                else:
                    store.cond.wait()
        if hook is not None:
            hook()
        yield from pending
