"""What the server did, counted: the apiserver-side cost of a client, for tests and benchmarks.

Every API request adds to the totals (control endpoints under /sandbox do not). `reset()` starts
a new measurement; `GET /sandbox/stats` and `DELETE /sandbox/stats` do the same over HTTP.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class ServerStats:
    """Thread-safe counters of API work since start or the last reset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Watches and log streams open now (the apiserver's apiserver_longrunning_requests): a
        # gauge, so reset() leaves it alone.
        self.open_streams = 0
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.by_verb: Counter[str] = (
                Counter()
            )  # get, list, watch, create, update, patch, delete
            self.by_status: Counter[int] = Counter()
            self.list_bytes = 0  # response bytes of LIST requests
            self.response_bytes = 0  # response bytes of every JSON answer (streams excluded)
            self.objects_scanned = 0  # objects a LIST or a watch's initial list looked at
            self.objects_returned = 0  # objects LISTs returned
            self.deletes = 0  # DELETE requests
            self.deletes_not_found = 0  # of which answered 404
            self.connections = 0  # TCP connections accepted
            self.rejected_bodies = 0  # requests refused before their body was read (401, 413)

    def connection(self) -> None:
        with self._lock:
            self.connections += 1

    def stream_opened(self) -> None:
        with self._lock:
            self.open_streams += 1

    def stream_closed(self) -> None:
        with self._lock:
            self.open_streams -= 1

    def rejected_body(self) -> None:
        with self._lock:
            self.rejected_bodies += 1

    def request(
        self, verb: str, status: int | None, *, response_bytes: int, scanned: int, returned: int
    ) -> None:
        with self._lock:
            self.requests += 1
            self.by_verb[verb] += 1
            if status is not None:
                self.by_status[status] += 1
            self.response_bytes += response_bytes
            self.objects_scanned += scanned
            if verb == "list":
                self.list_bytes += response_bytes
                self.objects_returned += returned
            if verb == "delete":
                self.deletes += 1
                if status == 404:
                    self.deletes_not_found += 1

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "byVerb": dict(self.by_verb),
                "byStatus": {str(code): count for code, count in self.by_status.items()},
                "listBytes": self.list_bytes,
                "responseBytes": self.response_bytes,
                "objectsScanned": self.objects_scanned,
                "objectsReturned": self.objects_returned,
                "deletes": self.deletes,
                "deletesNotFound": self.deletes_not_found,
                "connections": self.connections,
                "rejectedBodies": self.rejected_bodies,
                "openStreams": self.open_streams,
            }
