"""HTTP front end of the RunPod API sandbox, one port as api.runpod.io: POST /graphql, REST v2
under /v2 (rest_v2.py), and the control endpoint /sandbox/faults; all need the bearer key.

GraphQL like api.runpod.io: a missing or wrong key is HTTP 401; a malformed query is HTTP 400
with a GraphQL error; GraphQL errors otherwise come back with HTTP 200. v2: RFC 9457 problem
details, RateLimit/RateLimit-Policy headers on every authenticated answer, 429 + Retry-After
past a quota (ratelimit.py) or when the `throttle` knob says so. Every request received is
recorded (`received` for GraphQL, `received_v2` for v2) so tests can check what reached the wire.

`/sandbox/faults` (GET shows the knobs, POST sets them from JSON of the same names, DELETE
resets them; faults.py), as `squarepeg sandbox` serves its own, so a sandbox in another process
(`runpod-deploy sandbox`) can be told to fail.
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

from ..serving import HangupsAreNormal, MethodDispatch
from .graphql import GraphQLSyntaxError, Operation, parse
from .lifecycle import Throttled
from .operations import HttpFailure, QueryFailure, RunPodApi
from .ratelimit import RateLimiter
from .rest_v2 import Answer, Problem, RestV2

logger = logging.getLogger(__name__)

_MAX_BODY = 1 << 20


@dataclass
class ReceivedQuery:
    """One POST /graphql as the sandbox saw it."""

    text: str
    operation: Operation | None  # None: the query did not parse
    syntax_error: str | None
    status: int


@dataclass
class ReceivedRequest:
    """One REST v2 request as the sandbox saw it (what an adapter sent, for request checks)."""

    method: str
    target: str  # path and query string
    content_type: str | None
    body: bytes
    status: int
    operation_id: str | None  # None: no operation of the document matched


class RunPodHTTPServer(HangupsAreNormal, ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: RunPodApi, api_key: str) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.api_key = api_key
        self.rest = RestV2(api)
        self.limiter = RateLimiter(api.faults)
        self.received: list[ReceivedQuery] = []
        self.received_v2: list[ReceivedRequest] = []
        self.received_lock = threading.Lock()

    def record(self, entry: ReceivedQuery) -> None:
        with self.received_lock:
            self.received.append(entry)

    def record_v2(self, entry: ReceivedRequest) -> None:
        with self.received_lock:
            self.received_v2.append(entry)


class _Handler(MethodDispatch, BaseHTTPRequestHandler):
    server: RunPodHTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("runpod sandbox: " + format, *args)

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/v2" or path.startswith("/v2/"):
            self._v2(method)
        elif path.rstrip("/") == "/sandbox/faults":
            self._faults(method)
        elif path.rstrip("/") == "/graphql" and method == "POST":
            self._graphql()
        elif method == "GET":
            self._send(404, {"errors": [{"message": "POST GraphQL queries to /graphql"}]})
        else:
            self._send(404, {"errors": [{"message": f"no such endpoint {self.path}"}]})

    def _read_body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return None
        return self.rfile.read(length)

    # -- GraphQL ---------------------------------------------------------------------------------
    def _graphql(self) -> None:
        body = self._read_body()
        if body is None:
            self._send(413, {"errors": [{"message": "request too large"}]})
            return
        if not self._authorized():
            self._send(401, {"errors": [{"message": "Unauthorized"}]})
            return
        api = self.server.api
        if api.faults.graphql_retired:
            gone = {"title": "Gone", "status": 410, "detail": "the GraphQL API has been retired"}
            self._send(410, gone)
            return
        if api.faults.latency_ms:
            time.sleep(api.faults.latency_ms / 1000)
        retry, _ = self.server.limiter.take(self.server.api_key)
        if retry is not None:
            self._send(
                429, {"errors": [{"message": "Too Many Requests"}]}, {"Retry-After": str(retry)}
            )
            return
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
        except Throttled as exc:
            self.server.record(ReceivedQuery(text, operation, None, 429))
            self._send(
                429,
                {"errors": [{"message": "Too Many Requests"}]},
                {"Retry-After": str(exc.retry_after)},
            )
            return
        except HttpFailure as exc:
            self.server.record(ReceivedQuery(text, operation, None, exc.status))
            self._send_raw(exc.status, exc.body.encode(), "text/html")
            return
        self.server.record(ReceivedQuery(text, operation, None, 200))
        self._send(200, {"data": data})

    # -- REST v2 ---------------------------------------------------------------------------------
    def _v2(self, method: str) -> None:
        body = self._read_body()
        rest = self.server.rest
        operation_id = rest.operation_id(method, self.path)
        if body is None:
            self._problem(Problem(413, "request body too large"), {}, method, b"", operation_id)
            return
        if not self._authorized():
            # #/components/responses/UnauthorizedError (no rate-limit headers: not a caller yet)
            missing = not self.headers.get("Authorization")
            detail = "missing bearer token" if missing else "invalid bearer token"
            self._problem(Problem(401, detail), {}, method, body, operation_id)
            return
        faults = self.server.api.faults
        if faults.latency_ms:
            time.sleep(faults.latency_ms / 1000)
        retry, limits = self.server.limiter.take(self.server.api_key)
        throttle = faults.take_throttle(operation_id) if operation_id and retry is None else None
        if retry is not None or throttle is not None:
            wait = retry if retry is not None else throttle.retry_after_sec  # type: ignore[union-attr]
            window = "the minute window" if retry is not None else "a burst"
            problem = Problem(
                429, f"rate limit exceeded for {window}", headers={"Retry-After": str(wait)}
            )
            self._problem(problem, limits, method, body, operation_id)
            return
        if operation_id and faults.take_http_503(operation_id):
            problem = Problem(503, "the service is temporarily unavailable; retry with backoff")
            self._problem(problem, limits, method, body, operation_id)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            answer = rest.handle(method, self.path, headers, body)
        except Problem as problem:
            self._problem(problem, limits, method, body, operation_id)
            return
        self._record_v2(method, body, answer.status, operation_id)
        if answer.events is not None:
            self._stream(answer, limits)
            return
        payload = b"" if answer.payload is None else json.dumps(answer.payload).encode()
        self._send_raw(
            answer.status,
            payload,
            answer.content_type if payload else None,
            {**limits, **answer.headers},
        )

    def _record_v2(self, method: str, body: bytes, status: int, operation_id: str | None) -> None:
        self.server.record_v2(
            ReceivedRequest(
                method, self.path, self.headers.get("Content-Type"), body, status, operation_id
            )
        )

    def _problem(
        self,
        problem: Problem,
        limits: dict[str, str],
        method: str,
        body: bytes,
        operation_id: str | None,
    ) -> None:
        self._record_v2(method, body, problem.status, operation_id)
        payload = json.dumps(problem.body()).encode()
        self._send_raw(
            problem.status, payload, "application/problem+json", {**limits, **problem.headers}
        )

    def _stream(self, answer: Answer, limits: dict[str, str]) -> None:
        """text/event-stream, chunked, until the generator ends or the client goes away."""
        assert answer.events is not None
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "keep-alive")
        for name, value in {**limits, **answer.headers}.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for chunk in answer.events:
                if self.server.api.closed:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        finally:
            close = getattr(answer.events, "close", None)
            if close is not None:
                close()

    # -- control ---------------------------------------------------------------------------------
    def _faults(self, method: str) -> None:
        body = self._read_body()
        if not self._authorized():
            self._send(401, {"error": "Unauthorized"})
            return
        faults = self.server.api.faults
        if method == "POST":
            try:
                faults.update_from_json(json.loads(body or b"{}"))
            except ValueError as exc:
                self._send(400, {"error": f"bad fault knobs: {exc}"})
                return
        elif method == "DELETE":
            faults.reset()
        elif method != "GET":
            self._send(
                405,
                {"error": f"{method} not allowed on /sandbox/faults"},
                {"Allow": "GET, POST, DELETE"},
            )
            return
        self._send(200, faults.to_json())

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            key.strip().encode(), self.server.api_key.encode()
        )

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
