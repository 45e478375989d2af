"""The pod watch thread and the messages it feeds to the main thread's queue.

The main thread only ever waits on the queue, so an interrupt (also a queue message) is handled
at once. Each watch carries a generation: in Job mode a retry bumps it, and messages from the
watches of earlier attempts are then recognised as stale.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from typing import Any

from pegboard.domain.errors import PortError
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.retry import Backoff

logger = logging.getLogger(__name__)

LONG_WATCH_SECONDS = 3600.0  # after startup: one long watch, renewed when it ends
WATCH_RETRIES = 3
# Renewing a failed watch: 0.5 s, 1 s, 2 s, then the run gives up (WATCH_RETRIES).
WATCH_BACKOFF = Backoff(
    first_delay=0.5, factor=2.0, max_delay=2.0, attempts_per_outage=WATCH_RETRIES
)
JOB_NAME_LABEL = "job-name"


class Msg(enum.Enum):
    POD = "pod"
    WATCH_END = "watch-end"
    WATCH_ERROR = "watch-error"
    PUMP_DONE = "pump-done"
    INTERRUPT = "interrupt"
    CREATE_REFUSED = "create-refused"  # the Job's pod was refused (payload: the EventNotice)


Message = tuple[Msg, Any]


def pod_selectors(kind: ResourceKind, name: str) -> dict[str, str]:
    """What selects the pods to watch: the Pod by name, or the Job's pods by its label."""
    if kind is ResourceKind.POD:
        return {"field_selector": f"metadata.name={name}"}
    return {"label_selector": f"{JOB_NAME_LABEL}={name}"}


class PodWatcher:
    """Starts watch threads that put POD events, then WATCH_END or WATCH_ERROR, on `messages`."""

    def __init__(
        self, cluster: Cluster, messages: queue.Queue[Message], stop: threading.Event
    ) -> None:
        self.cluster = cluster
        self.messages = messages
        self.stop = stop
        self.generation = 0

    def watch(self, timeout: float, *, namespace: str, selectors: dict[str, str]) -> None:
        gen = self.generation

        def watch() -> None:
            try:
                for event in self.cluster.watch(
                    ResourceKind.POD, namespace=namespace, timeout=timeout, **selectors
                ):
                    if self.stop.is_set() or gen != self.generation:
                        return
                    self.messages.put((Msg.POD, event))
            except PortError as exc:
                self.messages.put((Msg.WATCH_ERROR, (gen, exc)))
                return
            except Exception as exc:  # a broken connection in the client library
                logger.debug("watch failed", exc_info=True)
                self.messages.put((Msg.WATCH_ERROR, (gen, exc)))
                return
            self.messages.put((Msg.WATCH_END, gen))

        threading.Thread(target=watch, name="squarepeg-watch", daemon=True).start()

    def renew_after(self, delay: float) -> None:
        """Retry a failed watch after `delay`, by posting the WATCH_END it never sent."""
        self.queue_after(delay, (Msg.WATCH_END, self.generation))

    def queue_after(self, delay: float, message: Message) -> None:
        timer = threading.Timer(delay, self.messages.put, args=(message,))
        timer.daemon = True
        timer.start()

    def next_generation(self) -> None:
        """Silence the watches started so far: their messages become stale."""
        self.generation += 1

    def is_stale(self, msg: Msg, payload: Any) -> bool:
        """A watch message from an earlier attempt's watch."""
        if msg is Msg.WATCH_END:
            return bool(payload != self.generation)
        if msg is Msg.WATCH_ERROR:
            return bool(payload[0] != self.generation)
        return False
