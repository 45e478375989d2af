"""Surfacing Kubernetes events while a pod starts: Warning events (or, on failure, any event)
about the Job and its pod, each shown once.

While startup lasts past EVENT_WATCH_FIRST seconds, each involved object's events are followed
with a watch (fieldSelector on involvedObject; the current ones arrive first as ADDED), not
listed again and again: one request per object per EVENT_WATCH_WINDOW, whatever happens. A
failure or a timeout still lists once, to show every event that explains it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pegboard.domain.errors import PortError
from pegboard.domain.kubernetes.pod_start import EventNotice, events_to_surface, refused_pod_create
from pegboard.domain.ports.cluster import Cluster

from .status import StatusUI

logger = logging.getLogger(__name__)

EVENT_WATCH_FIRST = 2.0  # a run that starts quickly never asks for events
EVENT_WATCH_WINDOW = 60.0  # one watch request lasts at most this long; reopened while starting
TARGET_CHECK_EVERY = 3.0  # how often (in-process, no request) to look for a newly known target
# The former polling tunables' names, kept importable (lifecycle re-exports them).
EVENT_POLL_FIRST = EVENT_WATCH_FIRST
EVENT_POLL_EVERY = TARGET_CHECK_EVERY

# An involved object: its name and, once known, its uid.
Involved = tuple[str, str | None]


class EventSurfacer:
    """Shows each event once across the run; remembers the last Warning for a timeout message."""

    def __init__(self, cluster: Cluster, ui: StatusUI, *, startup_timeout_seconds: int) -> None:
        self.cluster = cluster
        self.ui = ui
        self.startup_timeout_seconds = startup_timeout_seconds
        self._lock = threading.Lock()  # the watch threads and the main thread both surface
        self._shown: set[tuple[str, str]] = set()
        self.last_warning: EventNotice | None = None
        # told of a FailedCreate that will not clear (Job mode: the run stops at once)
        self.on_refused: Callable[[EventNotice], None] | None = None

    def surface(
        self, targets: Sequence[Involved], *, namespace: str, all_types: bool = False
    ) -> None:
        """List the targets' events now and show the new ones (on failure: every type)."""
        for name, uid in targets:
            try:
                events = self.cluster.list_events(
                    namespace=namespace, involved_name=name, involved_uid=uid
                )
            except (PortError, OSError) as exc:
                logger.debug("listing events failed: %s", exc)
                continue
            self.show(events, name=name, uid=uid, all_types=all_types)

    def show(
        self,
        events: Iterable[Mapping[str, Any]],
        *,
        name: str,
        uid: str | None,
        all_types: bool = False,
    ) -> None:
        with self._lock:
            notices = events_to_surface(
                events,
                involved_name=name,
                involved_uid=uid,
                already_shown=frozenset(self._shown),
                warnings_only=not all_types,
            )
            for notice in notices:
                self._shown.add(notice.key)
                refused = self.on_refused is not None and refused_pod_create(notice)
                if refused and self.on_refused is not None:
                    self.on_refused(notice)  # the run ends with it: no "still waiting"
                if notice.type == "Warning":
                    first = self.last_warning is None
                    self.last_warning = notice
                    self.ui.warn(f"{notice.reason}: {notice.message}")
                    if first and not all_types and not refused:
                        self.ui.detail(
                            f"still waiting, up to --timeout ({self.startup_timeout_seconds}s)"
                        )
                else:
                    self.ui.detail(f"{notice.reason}: {notice.message}")

    def follow(
        self,
        targets: Callable[[], Sequence[Involved]],
        *,
        namespace: str,
        still_starting: Callable[[], bool],
        stop: threading.Event,
        first: float = EVENT_WATCH_FIRST,
        check_every: float = TARGET_CHECK_EVERY,
        window: float = EVENT_WATCH_WINDOW,
    ) -> None:
        """After `first` seconds of startup, watch each target's events until startup ends
        (in Job mode the pod becomes a target once the Job has created it)."""

        def watch(name: str, uid: str | None) -> None:
            while still_starting() and not stop.is_set():
                try:
                    for event in self.cluster.watch_events(
                        namespace=namespace, involved_name=name, involved_uid=uid, timeout=window
                    ):
                        if stop.is_set() or not still_starting():
                            return
                        if event.type in ("ADDED", "MODIFIED"):
                            self.show([event.object], name=name, uid=uid)
                except (PortError, OSError) as exc:
                    logger.debug("watching events of %s failed: %s", name, exc)
                    if stop.wait(check_every):  # back off, then watch again
                        return

        def manage() -> None:
            watched: set[Involved] = set()
            wait = first
            while not stop.wait(wait):
                if not still_starting():
                    return
                for target in targets():
                    if target not in watched:
                        watched.add(target)
                        threading.Thread(
                            target=watch, args=target, name="squarepeg-events", daemon=True
                        ).start()
                wait = check_every

        threading.Thread(target=manage, name="squarepeg-events", daemon=True).start()
