"""HTTP front end of the RunPod API sandbox: POST /graphql with a bearer key, JSON in and out.

Like api.runpod.io: a missing or wrong key is HTTP 401; a malformed query is HTTP 400 with a
GraphQL error; GraphQL errors otherwise come back with HTTP 200. Every query received is
recorded (text, parse result) so tests can check what reached the wire.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .graphql import GraphQLSyntaxError, Operation, parse
from .operations import HttpFailure, QueryFailure, RunPodApi

logger = logging.getLogger(__name__)

_MAX_BODY = 1 << 20


@dataclass
class ReceivedQuery:
    """One POST /graphql as the sandbox saw it."""

    text: str
    operation: Operation | None  # None: the query did not parse
    syntax_error: str | None
    status: int


class RunPodHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: RunPodApi, api_key: str) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.api_key = api_key
        self.received: list[ReceivedQuery] = []
        self.received_lock = threading.Lock()

    def record(self, entry: ReceivedQuery) -> None:
        with self.received_lock:
            self.received.append(entry)


class _Handler(BaseHTTPRequestHandler):
    server: RunPodHTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("runpod sandbox: " + format, *args)

    def do_GET(self) -> None:
        self._send(404, {"errors": [{"message": "POST GraphQL queries to /graphql"}]})

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") != "/graphql":
            self._send(404, {"errors": [{"message": f"no such endpoint {self.path}"}]})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._send(413, {"errors": [{"message": "request too large"}]})
            return
        body = self.rfile.read(length)
        if not self._authorized():
            self._send(401, {"errors": [{"message": "Unauthorized"}]})
            return
        api = self.server.api
        if api.faults.latency_ms:
            time.sleep(api.faults.latency_ms / 1000)
        try:
            payload = json.loads(body)
            text = payload["query"]
            if not isinstance(text, str):
                raise TypeError("query is not a string")
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"errors": [{"message": f"bad request body: {exc}"}]})
            return
        try:
            operation = parse(text)
        except GraphQLSyntaxError as exc:
            self.server.record(ReceivedQuery(text, None, str(exc), 400))
            self._send(400, {"errors": [{"message": f"Syntax Error: {exc}"}]})
            return
        try:
            data = api.execute(operation)
        except QueryFailure as exc:
            self.server.record(ReceivedQuery(text, operation, None, 200))
            self._send(200, {"errors": [{"message": str(exc)}], "data": None})
            return
        except HttpFailure as exc:
            self.server.record(ReceivedQuery(text, operation, None, exc.status))
            self._send_raw(exc.status, exc.body.encode(), "text/html")
            return
        self.server.record(ReceivedQuery(text, operation, None, 200))
        self._send(200, {"data": data})

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            key.strip().encode(), self.server.api_key.encode()
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json")

    def _send_raw(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
