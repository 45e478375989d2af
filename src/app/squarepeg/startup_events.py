"""Surfacing Kubernetes events while a pod starts: Warning events (or, on failure, any event)
about the Job and its pod, each shown once, and a thread that asks now and then."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from pegboard.domain.errors import PortError
from pegboard.domain.ports.cluster import Cluster
from pegboard.domain.squarepeg.fail_fast import EventNotice, events_to_surface

from .status import StatusUI

logger = logging.getLogger(__name__)

EVENT_POLL_FIRST = 2.0  # a run that starts quickly never asks for events
EVENT_POLL_EVERY = 3.0

# An involved object: its name and, once known, its uid.
Involved = tuple[str, str | None]


class EventSurfacer:
    """Shows each event once across the run; remembers the last Warning for a timeout message."""

    def __init__(self, cluster: Cluster, ui: StatusUI, *, startup_timeout_seconds: int) -> None:
        self.cluster = cluster
        self.ui = ui
        self.startup_timeout_seconds = startup_timeout_seconds
        self._lock = threading.Lock()  # the poll thread and the main thread both surface
        self._shown: set[tuple[str, str]] = set()
        self.last_warning: EventNotice | None = None

    def surface(
        self, targets: Sequence[Involved], *, namespace: str, all_types: bool = False
    ) -> None:
        with self._lock:
            for name, uid in targets:
                try:
                    events = self.cluster.list_events(
                        namespace=namespace, involved_name=name, involved_uid=uid
                    )
                except (PortError, OSError) as exc:
                    logger.debug("listing events failed: %s", exc)
                    continue
                notices = events_to_surface(
                    events,
                    involved_name=name,
                    involved_uid=uid,
                    already_shown=frozenset(self._shown),
                    warnings_only=not all_types,
                )
                for notice in notices:
                    self._shown.add(notice.key)
                    if notice.type == "Warning":
                        first = self.last_warning is None
                        self.last_warning = notice
                        self.ui.warn(f"{notice.reason}: {notice.message}")
                        if first and not all_types:
                            self.ui.detail(
                                f"still waiting, up to --timeout ({self.startup_timeout_seconds}s)"
                            )
                    else:
                        self.ui.detail(f"{notice.reason}: {notice.message}")


def start_event_polling(
    surface: Callable[[], None],
    *,
    still_starting: Callable[[], bool],
    stop: threading.Event,
    first: float,
    every: float,
) -> None:
    """While startup lasts, ask now and then what blocks it (never for a quick start)."""

    def poll() -> None:
        wait = first
        while not stop.wait(wait):
            if not still_starting():
                return
            surface()
            wait = every

    threading.Thread(target=poll, name="squarepeg-events", daemon=True).start()
