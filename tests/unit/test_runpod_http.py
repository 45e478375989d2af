"""RunPodHttp (the RunPod adapter's thin client) against a scripted HTTP server on 127.0.0.1:
timeouts, bounded retries with backoff, 429 with Retry-After, problem details by status, the
bearer key, keep-alive reuse, and which failures leave a create's outcome unknown."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pegboard.adapters.runpod.http import NotSent, RateLimited, RunPodHttp, retry_after_seconds
from pegboard.adapters.runpod.problems import InsufficientBalance, error_for_status, problem_text
from pegboard.domain.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    PortError,
    Transient,
    Unauthorized,
    Unreachable,
)

Reply = tuple[int, dict[str, str], bytes]


class Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies: list[Reply | str] = []  # "hang" / "close": misbehave instead
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.connections: set[int] = set()
        self.release = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    server: Scripted
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, dict(self.headers), body))
        self.server.connections.add(self.client_address[1])
        reply = self.server.replies.pop(0) if self.server.replies else (200, {}, b"{}")
        if reply == "hang":
            self.server.release.wait(5)
            self.close_connection = True
            return
        if reply == "close":
            self.close_connection = True
            return
        assert not isinstance(reply, str)
        status, headers, payload = reply
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _any


@pytest.fixture
def server() -> Iterator[Scripted]:
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()


def problem(status: int, detail: str, **extra: Any) -> Reply:
    body = {"title": "x", "status": status, "detail": detail, **extra}
    return status, {"Content-Type": "application/problem+json"}, json.dumps(body).encode()


def ok(value: Any, status: int = 200) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


def client(server: Scripted, sleeps: list[float], **kw: Any) -> RunPodHttp:
    return RunPodHttp(
        f"http://127.0.0.1:{server.server_address[1]}",
        lambda: "sekret",
        sleep=sleeps.append,
        **{"timeout_sec": 2.0, **kw},
    )


def test_a_get_carries_the_key_and_returns_the_json(server: Scripted) -> None:
    server.replies.append(ok({"pods": []}))
    http = client(server, [])
    assert http.request("list", "GET", "/v2/pods", params={"a": "b c"}) == {"pods": []}
    method, path, headers, _ = server.seen[0]
    assert (method, path) == ("GET", "/v2/pods?a=b+c")
    assert headers["Authorization"] == "Bearer sekret"


def test_a_post_sends_json_and_204_is_none(server: Scripted) -> None:
    server.replies.append((204, {}, b""))
    http = client(server, [])
    assert http.request("act", "POST", "/v2/pods/p1/action", body={"action": "stop"}) is None
    _, _, headers, body = server.seen[0]
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"action": "stop"}


def test_keep_alive_reuses_one_connection(server: Scripted) -> None:
    server.replies.extend([ok({}), ok({}), ok({})])
    http = client(server, [])
    for _ in range(3):
        http.request("get", "GET", "/v2/pods")
    assert len(server.connections) == 1


def test_429_waits_for_retry_after_and_says_so_in_one_line(
    server: Scripted, caplog: pytest.LogCaptureFixture
) -> None:
    limited = problem(429, "rate limit exceeded for the minute window")
    server.replies.extend([(429, {"Retry-After": "7"}, limited[2]), ok({"x": 1})])
    sleeps: list[float] = []
    with caplog.at_level(logging.WARNING):
        assert client(server, sleeps).request("read", "GET", "/v2/pods") == {"x": 1}
    assert sleeps == [7.0]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "HTTP 429" in lines[0] and "7 s" in lines[0]


def test_429_is_waited_for_even_on_a_create(server: Scripted) -> None:
    server.replies.extend([(429, {"Retry-After": "2"}, b"{}"), ok({"id": "p1"}, 201)])
    sleeps: list[float] = []
    answer = client(server, sleeps).request("create", "POST", "/v2/pods", body={}, retry=False)
    assert answer == {"id": "p1"} and sleeps == [2.0]


def test_a_retry_after_past_the_bound_is_raised_at_once(server: Scripted) -> None:
    server.replies.append((429, {"Retry-After": "3600"}, b"{}"))
    sleeps: list[float] = []
    with pytest.raises(RateLimited, match="Retry-After 3600"):
        client(server, sleeps, max_retry_after_sec=60).request("read", "GET", "/v2/pods")
    assert sleeps == []


def test_429_every_time_stops_after_the_attempts(server: Scripted) -> None:
    server.replies.extend([(429, {"Retry-After": "1"}, b"{}")] * 5)
    sleeps: list[float] = []
    with pytest.raises(RateLimited):
        client(server, sleeps, attempts=3).request("read", "GET", "/v2/pods")
    assert sleeps == [1.0, 1.0] and len(server.seen) == 3


def test_5xx_is_retried_with_backoff_then_raised(server: Scripted) -> None:
    server.replies.extend([problem(503, "busy")] * 3)
    sleeps: list[float] = []
    with pytest.raises(Transient, match=r"busy \(HTTP 503\)"):
        client(server, sleeps, attempts=3, backoff_sec=0.5).request("read", "GET", "/v2/pods")
    assert sleeps == [0.5, 1.0]


def test_a_create_is_sent_once_on_5xx(server: Scripted) -> None:
    server.replies.extend([problem(500, "oops"), ok({"id": "p2"})])
    sleeps: list[float] = []
    with pytest.raises(Transient):
        client(server, sleeps).request("create", "POST", "/v2/pods", body={}, retry=False)
    assert len(server.seen) == 1 and sleeps == []


def test_no_answer_within_the_timeout_is_transient(server: Scripted) -> None:
    server.replies.append("hang")
    with pytest.raises(Transient, match=r"did not answer within 0\.3 s"):
        client(server, [], timeout_sec=0.3).request("read", "GET", "/v2/pods", retry=False)


def test_a_refused_connection_is_not_sent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = RunPodHttp(f"http://127.0.0.1:{port}", lambda: "k", sleep=lambda _: None)
    with pytest.raises(NotSent) as caught:
        http.request("create", "POST", "/v2/pods", body={}, retry=False)
    assert isinstance(caught.value, Unreachable)


def test_an_idle_connection_closed_by_the_server_is_reopened_for_a_get(server: Scripted) -> None:
    server.replies.extend([ok({"n": 1}), "close", ok({"n": 2})])
    sleeps: list[float] = []
    http = client(server, sleeps)
    assert http.request("a", "GET", "/v2/pods") == {"n": 1}
    assert http.request("b", "GET", "/v2/pods") == {"n": 2}
    assert sleeps == []  # sent again at once on a fresh connection, no backoff


def test_a_non_json_success_is_transient(server: Scripted) -> None:
    server.replies.append((200, {"Content-Type": "text/html"}, b"<html>gateway</html>"))
    with pytest.raises(Transient, match="non-JSON"):
        client(server, []).request("read", "GET", "/v2/pods", retry=False)


def test_a_non_json_5xx_page_is_transient(server: Scripted) -> None:
    server.replies.append((502, {"Content-Type": "text/html"}, b"<html>bad gateway</html>"))
    with pytest.raises(Transient, match=r"HTTP 502"):
        client(server, []).request("read", "GET", "/v2/pods", retry=False)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, Invalid),
        (401, Unauthorized),
        (402, InsufficientBalance),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (410, NotFound),
        (422, Invalid),
        (429, Transient),
        (500, Transient),
        (503, Transient),
        (418, PortError),
    ],
)
def test_errors_are_classified_by_status_never_by_text(status: int, kind: type) -> None:
    # The same misleading text under every status: only the status decides.
    error = error_for_status(status, {"detail": "pod not found, out of stock"}, "do it")
    assert type(error) is kind and error.status == status


def test_problem_text_shows_detail_validation_errors_and_a_type() -> None:
    text = problem_text(
        {"detail": "bad\nbody", "errors": ["$.gpu: required"], "type": "urn:x"}, 422
    )
    assert text == "bad body ($.gpu: required) [urn:x]"
    assert problem_text(None, 500) == "HTTP 500"


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(formatdate(1000.0 + 30, usegmt=True), now=1000.0) == 30.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(PortError, match="RUNPOD_API_BASE_URL"):
        RunPodHttp("ftp://x", lambda: "k")


def test_https_goes_through_the_environment_proxy_unless_no_proxy() -> None:
    from pegboard.adapters.runpod.http import _proxy_for

    env = {"HTTPS_PROXY": "http://proxy.local:3128", "NO_PROXY": "internal.example,.corp"}
    assert _proxy_for("https", "api.runpod.io", env) == ("proxy.local", 3128)
    assert _proxy_for("https", "internal.example", env) is None
    assert _proxy_for("https", "x.corp", env) is None
    assert _proxy_for("https", "api.runpod.io", {}) is None


def _rest_cloud(server: Scripted) -> Any:
    from pegboard.adapters.runpod.gpu_cloud import RunPodGpuCloud

    return RunPodGpuCloud(
        environ={
            "RUNPOD_API_KEY": "k",
            "RUNPOD_API_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
        },
        sleep=lambda _: None,
    )


@pytest.mark.parametrize("status", [404, 410])
def test_graphql_gone_refuses_spot_in_one_line_naming_the_key(
    server: Scripted, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    from pegboard.adapters.runpod import GraphQLGone
    from pegboard.domain.ports.gpu_cloud import PodRequest

    server.replies.append(problem(status, "no such endpoint"))
    cloud = _rest_cloud(server)
    spot = PodRequest(
        name="r", image="i", gpu_id="NVIDIA RTX A4000", datacenter_id="EU-RO-1", spot=True
    )
    with caplog.at_level(logging.INFO), pytest.raises(GraphQLGone) as caught:
        cloud.create_pod(spot)
    line = str(caught.value)
    assert "\n" not in line and line.startswith("pod.spot: RunPod's GraphQL API is gone")
    assert f"HTTP {status}" in line and "pod.spot" in line.split(";")[1]
    said = [r.getMessage() for r in caplog.records if "GraphQL" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("[runpod] pod.spot:")
    # Known gone: the next candidate is refused without asking again.
    with pytest.raises(GraphQLGone):
        cloud.create_pod(spot)
    assert [p for _, p, _, _ in server.seen] == ["/graphql"]


def test_a_create_without_spot_never_reaches_graphql(server: Scripted) -> None:
    from pegboard.domain.ports.gpu_cloud import PodRequest

    server.replies.append(ok({"id": "p1", "name": "r"}, 201))
    cloud = _rest_cloud(server)
    req = PodRequest(name="r", image="i", gpu_id="NVIDIA RTX A4000", datacenter_id="EU-RO-1")
    assert cloud.create_pod(req).pod_id == "p1"
    assert [(m, p) for m, p, _, _ in server.seen] == [("POST", "/v2/pods")]


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (problem(400, "no capacity for this GPU"), "NoCapacity"),
        (problem(402, "insufficient balance"), "InsufficientBalance"),
        (problem(403, "no access to the pool"), "Forbidden"),
        (problem(422, "bad body", errors=["$.gpu: required"]), "Invalid"),
        (problem(500, "upstream"), "CreateOutcomeUnknown"),
        ((200, {}, b'{"name": "r"}'), "CreateOutcomeUnknown"),
        ((429, {"Retry-After": "3600"}, b"{}"), "RateLimited"),
    ],
)
def test_a_create_failure_is_classified_by_status(
    server: Scripted, reply: Reply, kind: str
) -> None:
    from pegboard.domain.ports.gpu_cloud import PodRequest

    server.replies.append(reply)
    cloud = _rest_cloud(server)
    req = PodRequest(name="r", image="i", gpu_id="NVIDIA RTX A4000", datacenter_id="EU-RO-1")
    with pytest.raises(PortError) as caught:
        cloud.create_pod(req)
    assert type(caught.value).__name__ == kind
    assert len(server.seen) == 1  # sent once, whatever happened
