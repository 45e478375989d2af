"""Keep the run's own Pod or Job marked as held by a live runner, so no sweep deletes it.

The create request carries the first `squarepeg.io/runner-alive-until` annotation; a daemon
thread renews it (one merge PATCH) every RENEW_EVERY_SECONDS, until the run stops it. A run that
leaves its resource behind (kept, or its delete failed) releases the hold as it ends. SIGKILL stops
the renewals too: then the promise simply runs out (see pegboard.domain.squarepeg.runner_heartbeat).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pegboard.domain.errors import Forbidden, NotFound, PortError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.squarepeg.runner_heartbeat import (
    HOLD_SECONDS,
    RENEW_EVERY_SECONDS,
    heartbeat_patch,
    release_patch,
)

logger = logging.getLogger(__name__)


class RunnerHeartbeat:
    """Renews the hold on one resource; `beat()` is one renewal, `start()` the renewing thread."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        *,
        kind: ResourceKind,
        name: str,
        namespace: str,
        stop: threading.Event,
        notice: Callable[[str], None],
        renew_every: float = RENEW_EVERY_SECONDS,
        hold_seconds: float = HOLD_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.stop = stop
        self.notice = notice  # one line, said once, when the hold cannot be renewed at all
        self.renew_every = renew_every
        self.hold_seconds = hold_seconds
        self.beats = 0
        self._told = False
        # Held across a renewal and the release: no renewal lands after the release.
        self._lock = threading.Lock()
        self._released = False

    def beat(self) -> bool:
        """Renew once; False when there is nothing left to hold (gone, released) or no right to
        (403)."""
        with self._lock:
            if self._released:
                return False
            return self._renew()

    def release(self) -> bool:
        """The runner will read its resource no more: remove the hold, so a sweep or `squarepeg
        clean` may take it now rather than when the promise runs out. False when the PATCH failed
        (then the promise runs out by itself, HOLD_SECONDS at most)."""
        with self._lock:
            self._released = True
            try:
                self.cluster.patch(self.kind, self.name, release_patch(), namespace=self.namespace)
            except NotFound:
                return True  # gone: nothing held
            except (PortError, OSError) as exc:
                logger.debug("releasing the runner hold on %s failed: %s", self.name, exc)
                return False
            return True

    def _renew(self) -> bool:
        patch = heartbeat_patch(self.clock.now(), self.hold_seconds)
        try:
            self.cluster.patch(self.kind, self.name, patch, namespace=self.namespace)
        except NotFound:
            return False  # deleted (by this run's cleanup, or by hand): nothing to hold
        except Forbidden as exc:
            self._tell(
                f"cannot mark {self.kind.value.lower()} {self.name} as held by this run ({exc}); "
                "an orphan sweep with a short orphan_sweep_min_age may delete it while it is "
                "read (it needs patch on pods and jobs)"
            )
            return False
        except (PortError, OSError) as exc:  # transient: the hold outlasts a few missed renewals
            logger.debug("renewing the runner hold on %s failed: %s", self.name, exc)
            return True
        self.beats += 1
        return True

    def start(self) -> None:
        """Renew every `renew_every` seconds until `stop` is set (create set the first hold)."""

        def loop() -> None:
            while not self.stop.wait(self.renew_every):
                if not self.beat():
                    return

        threading.Thread(target=loop, name="squarepeg-heartbeat", daemon=True).start()

    def _tell(self, text: str) -> None:
        if not self._told:
            self._told = True
            self.notice(text)
