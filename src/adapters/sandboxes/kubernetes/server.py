"""HTTP/1.1 front end: authentication, routing, JSON bodies, chunked watch and log streams."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pegboard.adapters.kube_semantics.defaults import default_object
from pegboard.adapters.kube_semantics.garbage import check_policy
from pegboard.adapters.kube_semantics.listing import (
    MATCH_EXACT,
    ListOptions,
    expired_continue,
    list_page,
    parse_list_options,
)
from pegboard.adapters.kube_semantics.logs import log_container, not_started, parse_since_time
from pegboard.adapters.kube_semantics.resources import (
    LIMIT_RANGES,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    RESOURCE_QUOTAS,
)
from pegboard.adapters.kube_semantics.selectors import required_field_value, selector_matcher
from pegboard.adapters.kube_semantics.status import StatusError, success_body
from pegboard.adapters.kube_semantics.tables import table, wants_table
from pegboard.adapters.kube_semantics.validation import check_namespace, validate
from pegboard.domain.errors import UsageError

from ..serving import HangupsAreNormal, MethodDispatch
from .admission import Admission, prepare_policy_object
from .claims import bind_claim, check_claim
from .events import record_event
from .exec_session import SUPPORTED, ExecSession, exec_container, exec_options, negotiate
from .faults import Faults
from .garbage import default_policy, delete_with_policy
from .kubelet import Kubelet
from .lockdown import apply_documents
from .logs import LogQuery, LogRenderer
from .namespaces import Namespaces, check_namespace_object
from .openapi import GROUP_VERSIONS, discovery_document, group_version_document, unknown_fields
from .patching import apply_patch
from .rbac import User, Users, access_review, authorize, parse_rules, rules_review
from .scheduler import Scheduler
from .stats import ServerStats
from .store import JOBS, LEASES, PODS, RESOURCES, JsonObject, Resource, Store, deep_copy
from .websocket import accept_key, is_upgrade_request, offered_protocols

_CORE = re.compile(
    r"^/api/v1(?P<watch>/watch)?(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<plural>pods|events|resourcequotas|limitranges|nodes|persistentvolumeclaims)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>log|status|exec))?)?/?$"
)
_BATCH = re.compile(
    r"^/apis/batch/v1(?P<watch>/watch)?(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>jobs)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>status))?)?/?$"
)
_COORDINATION = re.compile(
    r"^/apis/coordination\.k8s\.io/v1(?P<watch>/watch)?(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<plural>leases)(?:/(?P<name>[^/]+)(?:/(?P<sub>status))?)?/?$"
)
_NAMESPACE = re.compile(
    r"^/api/v1(?P<watch>/watch)?/namespaces(?:/(?P<name>[^/]+)(?:/(?P<sub>status))?)?/?$"
)
_ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_RULES_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
_STREAM_BATCH = 4 << 20  # bytes of log per HTTP chunk when a backlog is served
_WAIT_SLICE = 0.5  # how often streams re-check the stop flag
_IOV_MAX = 512  # buffers per sendmsg (Linux allows 1024)
_TLS_RECORD = 16 << 10  # the most plaintext one TLS record carries (RFC 8446 5.1: 2^14 bytes)
_HANDSHAKE_TIMEOUT = 10.0  # seconds a client may take to finish the TLS handshake
MAX_REQUEST_BODY_BYTES = 3 << 20  # the apiserver's limit (3 MiB): larger bodies are a 413


@dataclass
class RecordedRequest:
    """One API request as the server saw it (control endpoints under /sandbox are not recorded)."""

    method: str
    path: str
    query: str
    time: float
    connection_id: int
    status: int | None = None
    verb: str = ""  # get, list, watch, create, update, patch, delete (discovery counts as get)
    response_bytes: int = 0  # JSON answer size (streams: 0)
    objects_scanned: int = 0  # objects a LIST (or a watch's initial list) looked at
    user_agent: str = ""

    def params(self) -> dict[str, list[str]]:
        return parse_qs(self.query, keep_blank_values=True)


@dataclass(frozen=True)
class Deletion:
    """A DELETE request that reached an object."""

    resource: str  # plural: pods, jobs, events
    namespace: str
    name: str
    propagation_policy: str


class ApiState:
    """Everything the handlers share."""

    def __init__(
        self, *, store: Store, kubelet: Kubelet, faults: Faults, token: str, scheduler: Scheduler
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.kubelet = kubelet
        self.faults = faults
        self.token = token
        self.users = Users(token)
        self.namespaces = Namespaces(store)
        self.admission = Admission(store, self.namespaces.labels)
        self.on_users_changed: Callable[[], None] = lambda: (
            None
        )  # the sandbox rewrites its kubeconfig
        self.requests: list[RecordedRequest] = []
        self.deletions: list[Deletion] = []
        self.stats = ServerStats()
        self.connection_ids = itertools.count(1)
        self.stopping = threading.Event()
        self.port = 0


# glibc's malloc, once a program sets these, keeps up to this much freed memory at the top of a
# heap (M_TRIM_THRESHOLD, default 128 KiB rising to 64 MiB) and serves blocks up to this size
# from its heaps, not from fresh mmaps (M_MMAP_THRESHOLD).
_MALLOC_TRIM_BYTES = 32 << 20
_MALLOC_MMAP_BYTES = 8 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """Let this process's malloc (glibc only) reuse the memory a log batch frees instead of
    returning it to the kernel. A handler renders each stored 1 MiB chunk of a timestamped log
    into a new ~1.3 MiB string, keeps a 4 MiB batch of them, sends it and frees it at once;
    a handler thread's heap then shrank past its trim threshold (madvise) and the next batch
    faulted every page back in, zeroed: ~30% of the sandbox's CPU serving a 256 MiB log.
    Process-wide, once; a no-op elsewhere. Whether it was set. Called only where the sandbox
    owns its process (`serve()`, the benchmarks): an embedded sandbox leaves its host process's
    allocator as it was."""
    import ctypes

    if sys.platform != "linux":
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, ValueError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MALLOC_MMAP_BYTES)
        and mallopt(_M_TRIM_THRESHOLD, _MALLOC_TRIM_BYTES)
    )


class SandboxHTTPServer(HangupsAreNormal, ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        state: ApiState,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.state = state
        self.ssl_context = ssl_context
        super().__init__(address, ApiHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """With TLS, the handshake happens here, in the connection's own thread: a client that
        stalls it holds up nobody else."""
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(_HANDSHAKE_TIMEOUT)
        try:
            secure = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            self.state.stats.connection()  # counted, though it never got to a request
            return
        secure.settimeout(None)
        try:
            super().finish_request(secure, client_address)
        finally:
            with contextlib.suppress(OSError):
                secure.close()


def _flag(params: dict[str, list[str]], key: str) -> bool:
    return (params.get(key) or [""])[-1].lower() in ("true", "1")


def _param(params: dict[str, list[str]], key: str) -> str | None:
    values = params.get(key)
    return values[-1] if values else None


def _int_param(params: dict[str, list[str]], key: str) -> int | None:
    value = _param(params, key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise StatusError(400, f"{key}: invalid value {value!r}: must be an integer") from None


class StreamAborted(Exception):
    """A fault cut the connection on purpose."""


class ApiHandler(MethodDispatch, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: SandboxHTTPServer
    server_version = "pegboard-kubernetes-sandbox"
    sys_version = ""

    _status: int | None = None
    _raw_body: bytes = b""
    _verb = ""
    _response_bytes = 0
    _scanned = 0
    _returned = 0
    _accounted = False
    _streaming = False  # a watch or log stream of this request is open (stats.open_streams)
    _record: RecordedRequest | None = None
    _warnings: list[str]  # Warning headers for the answer (unknown fields, PodSecurity warn)
    _user: User | None = None

    def setup(self) -> None:
        super().setup()
        self.connection_id = next(self.server.state.connection_ids)
        self.server.state.stats.connection()

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing --------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        """The request body, at most MAX_REQUEST_BODY_BYTES (else 413, connection closed)."""
        length = self.headers.get("Content-Length")
        if length:
            try:
                size = int(length)
            except ValueError:
                raise self._unreadable(400, f"invalid Content-Length {length!r}") from None
            if size > MAX_REQUEST_BODY_BYTES:
                raise self._too_large()
            return self.rfile.read(size)
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            total = 0
            while True:
                line = self.rfile.readline(64)
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    raise self._unreadable(400, "malformed chunked encoding") from None
                if size <= 0:
                    break
                total += size
                if total > MAX_REQUEST_BODY_BYTES:
                    raise self._too_large()
                parts.append(self.rfile.read(size))
                self.rfile.readline(64)
            while self.rfile.readline(65536) not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        return b""

    def _unreadable(self, code: int, message: str) -> StatusError:
        """The rest of the body stays unread: answer, then close the connection."""
        self.close_connection = True
        self.server.state.stats.rejected_body()
        return StatusError(code, message)

    def _too_large(self) -> StatusError:
        return self._unreadable(413, f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}")

    def _json_body(self) -> Any:
        raw = self._raw_body
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise StatusError(400, f"the request body is not valid JSON: {exc}") from None

    def _check_fields(
        self, resource: Resource, body: JsonObject, params: dict[str, list[str]]
    ) -> None:
        """fieldValidation: Strict refuses fields the schema does not declare (400), Warn (the
        default) answers with a Warning header per field, Ignore drops them silently."""
        mode = _param(params, "fieldValidation") or "Warn"
        if mode not in ("Strict", "Warn", "Ignore"):
            raise StatusError(
                400,
                f'fieldValidation: Unsupported value: "{mode}": supported values: '
                '"Ignore", "Strict", "Warn"',
            )
        if mode == "Ignore":
            return
        unknown = unknown_fields(resource.kind, body)
        if not unknown:
            return
        if mode == "Strict":
            fields = ", ".join(f'unknown field "{field}"' for field in unknown)
            version = resource.api_version.rsplit("/", 1)[-1]
            raise StatusError(
                400,
                f'{resource.kind} in version "{version}" cannot be handled as a {resource.kind}: '
                f"strict decoding error: {fields}",
            )
        self._warnings = [f'unknown field "{field}"' for field in unknown]

    def _send_json(self, code: int, body: Any) -> None:
        self._send_bytes(code, json.dumps(body, separators=(",", ":")).encode())

    def _send_bytes(self, code: int, data: bytes) -> None:
        """A JSON answer already encoded."""
        self._status = code
        self._response_bytes += len(data)
        self._account()  # before the client can see the answer, so counts never lag behind it
        self.send_response(code)
        for warning in self._warnings:
            self.send_header("Warning", f"299 - {json.dumps(warning)}")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, content_type: str) -> None:
        self._status = 200
        # Counted when it starts, like every answer: a watch or a log stream belongs to the
        # measurement it was opened in, however long it lasts.
        self._account()
        self._streaming = True
        self.server.state.stats.stream_opened()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"".join((b"%x\r\n" % len(data), data, b"\r\n")))

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def _client_gone(self) -> bool:
        """The client closed (or reset) its end of the connection while a stream was open.

        The apiserver (Go's net/http) reads the connection in the background and cancels the
        request when the client goes away, so its watches and log streams end at once. Without
        this a stream lasts until its timeout (a watch: up to 30 min) after its client exited.
        A client that sends nothing more while it reads a stream, as every HTTP/1.1 client
        does, makes the socket readable only by closing it (EOF, RST; TLS: close_notify)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _abort_connection(self) -> None:
        """Reset the TCP connection (SO_LINGER 0), as a crashed proxy or apiserver would."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.connection.close()
        raise StreamAborted

    def _dispatch(self, method: str) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        path, query = url.path, url.query
        self._status = None
        self._raw_body = b""
        self._verb = "get"
        self._response_bytes = self._scanned = self._returned = 0
        self._accounted = False
        self._warnings = []
        record: RecordedRequest | None = None
        if not path.startswith("/sandbox/"):
            record = RecordedRequest(
                method,
                path,
                query,
                time.time(),
                self.connection_id,
                user_agent=self.headers.get("User-Agent") or "",
            )
            state.requests.append(record)
        self._record = record
        try:
            try:
                # The token first: an unauthenticated client never gets its body read.
                try:
                    self._authenticate()
                except StatusError:
                    if self.headers.get("Content-Length") or self.headers.get("Transfer-Encoding"):
                        self.close_connection = True  # its body stays unread
                        state.stats.rejected_body()
                    raise
                if method in ("POST", "PUT", "PATCH", "DELETE"):
                    self._raw_body = self._read_body()
                if path.startswith("/sandbox/"):
                    self._control(method, path)
                    return
                if state.faults.latency_ms:
                    time.sleep(state.faults.latency_ms / 1000)
                params = parse_qs(query, keep_blank_values=True)
                rule = state.faults.take_reject(method, f"{path}?{query}" if query else path)
                if rule is not None:
                    raise StatusError(
                        rule.status,
                        rule.message or f"injected fault: {method} {path} answered {rule.status}",
                        reason=rule.reason or None,
                    )
                self._route(method, path, params)
            except StatusError as exc:
                if self._status is not None:  # a stream already started: nothing sane to add
                    self.close_connection = True
                    return
                self._send_json(exc.code, exc.body())
        except StreamAborted:
            pass
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self._account()
            if self._streaming:
                self._streaming = False
                state.stats.stream_closed()

    def _account(self) -> None:
        """Record the request's outcome in `requests` and `stats`, once."""
        record = self._record
        if record is None or self._accounted:
            return
        self._accounted = True
        record.status = self._status
        record.verb = self._verb
        record.response_bytes = self._response_bytes
        record.objects_scanned = self._scanned
        self.server.state.stats.request(
            self._verb,
            self._status,
            response_bytes=self._response_bytes,
            scanned=self._scanned,
            returned=self._returned,
        )

    def _authenticate(self) -> None:
        self._user = self.server.state.users.authenticate(self.headers.get("Authorization") or "")

    @property
    def user(self) -> User:
        assert self._user is not None  # set by _authenticate before any handler runs
        return self._user

    # -- control endpoints (for tests driving a sandbox in another process) ----------------------

    def _control(self, method: str, path: str) -> None:
        state = self.server.state
        if not self.user.admin:  # the knobs are the sandbox owner's, not its RBAC users'
            raise StatusError(403, f"{path}: only the sandbox's own token may use it")
        if path == "/sandbox/users" and method in ("GET", "POST"):
            if method == "POST":
                body = self._json_body() or {}
                try:
                    user = state.users.add(
                        str(body.get("name") or ""),
                        parse_rules(str(body.get("rules") or "")),
                        token=body.get("token") or None,
                    )
                except ValueError as exc:
                    raise StatusError(400, f"bad user: {exc}") from None
                state.on_users_changed()
                self._send_json(201, {"name": user.name, "token": user.token})
                return
            self._send_json(200, state.users.to_json())
        elif path == "/sandbox/objects" and method == "POST":
            body = self._json_body()
            documents = body if isinstance(body, list) else [body]
            try:
                apply_documents(state.store, state.namespaces, documents, source="request")
            except UsageError as exc:
                raise StatusError(400, str(exc)) from None
            self._send_json(201, {"applied": len(documents)})
        elif path == "/sandbox/faults":
            if method == "GET":
                pass
            elif method == "POST":
                body = self._json_body() or {}
                try:
                    state.faults.update_from_json(body)
                except (ValueError, KeyError, TypeError) as exc:
                    raise StatusError(400, f"bad fault knobs: {exc}") from None
            elif method == "DELETE":
                state.faults.reset()
            else:
                raise StatusError(405, f"{method} not allowed on {path}")
            self._send_json(200, state.faults.to_json())
        elif path == "/sandbox/requests" and method == "GET":
            self._send_json(200, [asdict(r) for r in list(state.requests)])
        elif path == "/sandbox/stats" and method in ("GET", "DELETE"):
            body = state.stats.to_json()
            if method == "DELETE":
                state.stats.reset()
            self._send_json(200, body)
        elif path == "/sandbox/deletions" and method == "GET":
            self._send_json(200, [asdict(d) for d in list(state.deletions)])
        elif path == "/sandbox/compact" and method == "POST":
            state.store.compact()
            self._send_json(200, {"resourceVersion": str(state.store.resource_version)})
        elif path == "/sandbox/events" and method == "POST":
            body = self._json_body() or {}
            involved = state.store.find(
                PODS, body.get("namespace", "default"), body.get("name", "")
            ) or {
                "kind": body.get("kind", "Pod"),
                "apiVersion": "v1",
                "metadata": {
                    "name": body.get("name", ""),
                    "namespace": body.get("namespace", "default"),
                },
            }
            event = record_event(
                state.store,
                involved,
                reason=body.get("reason", ""),
                message=body.get("message", ""),
                type=body.get("type", "Warning"),
                component=body.get("component", "kubelet"),
            )
            self._send_json(201, event)
        else:
            raise StatusError(404, f"no sandbox control endpoint {method} {path}")

    # -- the Kubernetes API ------------------------------------------------------------------------

    def _route(self, method: str, path: str, params: dict[str, list[str]]) -> None:
        match = _CORE.match(path) or _BATCH.match(path) or _COORDINATION.match(path)
        if match is None:
            if path.rstrip("/") in (_ACCESS_REVIEW, _RULES_REVIEW):
                self._access_review(method, rules=path.rstrip("/") == _RULES_REVIEW)
            elif (written := _NAMESPACE.match(path)) and (method != "GET" or written["watch"]):
                self._namespace_write(method, written["name"], written["sub"], params)
            else:
                self._discovery(method, path)
            return
        resource = RESOURCES[match["plural"]]
        namespace, name, sub = match["ns"], match["name"], match["sub"]
        if (resource is LEASES and sub) or (resource is NODES and (sub or namespace)):
            raise StatusError(404, "the server could not find the requested resource")
        if (
            sub
            and resource is not PODS
            and not (
                sub == "status" and resource in (JOBS, RESOURCE_QUOTAS, PERSISTENT_VOLUME_CLAIMS)
            )
        ):
            raise StatusError(404, "the server could not find the requested resource")
        self._verb = _verb(method, name, watch=bool(match["watch"] or _flag(params, "watch")))
        if self._record is not None:  # visible while a stream is still open
            self._record.verb = self._verb
        authorize(
            self.user,
            self._verb,
            group=resource.group,
            resource=resource.plural,
            subresource=sub,
            namespace=namespace,
            name=name,
        )
        if sub == "exec":
            self._exec(method, namespace or "default", name or "", params)
        elif resource is NODES and method != "GET":
            raise StatusError(
                405,
                "the sandbox's nodes are declared when it starts (nodes=, --node): "
                f"{method} is not served on nodes",
                reason="MethodNotAllowed",
            )
        elif (
            resource is NODES
            and not self.server.state.scheduler.declared
            and not (match["watch"] or _flag(params, "watch"))
        ):
            self._default_node(name, params)
        elif match["watch"] or _flag(params, "watch"):
            if method != "GET" or sub:
                raise StatusError(405, f"{method} is not supported for watch")
            self._watch(resource, namespace, name, params)
        elif method == "GET" and name is None:
            self._list(resource, namespace, params)
        elif method == "GET" and sub == "log":
            self._log(namespace or "default", name or "", params)
        elif method == "GET":
            found = self.server.state.store.get(resource, namespace or "", name or "")
            if resource is RESOURCE_QUOTAS:
                found = self.server.state.admission.with_quota_status(found)
            self._send_object(found, params)
        elif method == "POST" and name is None and namespace:
            self._create(resource, namespace, params)
        elif method == "DELETE" and name and namespace and not sub:
            self._delete(resource, namespace, name, params)
        elif method in ("PATCH", "PUT") and name and namespace and sub != "log":
            self._modify(method, resource, namespace, name, sub, params)
        else:
            raise StatusError(
                405,
                f"the server does not allow this method on the requested resource: {method} {path}",
                reason="MethodNotAllowed",
            )

    def _discovery(self, method: str, path: str) -> None:
        port = self.server.state.port
        if method != "GET":
            raise StatusError(404, "the server could not find the requested resource")
        path = path.rstrip("/") or "/"
        if path == "/openapi/v3":
            self._send_bytes(200, discovery_document())
            return
        if path.startswith("/openapi/v3/") and path[len("/openapi/v3/") :] in GROUP_VERSIONS:
            self._send_bytes(200, group_version_document(path[len("/openapi/v3/") :]))
            return
        if path == "/version":
            body: Any = {
                # Not yet the newest release (v1.37.0): kubectl 1.32 sends create bodies the
                # sandbox cannot read to a server that reports >= 1.34 (to do).
                "major": "1",
                "minor": "31",
                "gitVersion": "v1.31.0-pegboard-sandbox",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.22.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        elif path in ("/healthz", "/readyz", "/livez"):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(data)
            self._status = 200
            return
        elif path == "/api":
            body = {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}
                ],
            }
        elif path == "/apis":
            body = {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": group,
                        "versions": [{"groupVersion": f"{group}/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": f"{group}/v1", "version": "v1"},
                    }
                    for group in ("batch", "coordination.k8s.io", "authorization.k8s.io")
                ],
            }
        elif path == "/api/v1":
            body = _resource_list(
                "v1",
                [
                    ("pods", "Pod", _ALL_VERBS),
                    ("pods/log", "Pod", ("get",)),
                    ("pods/status", "Pod", _SUBRESOURCE_VERBS),
                    ("pods/exec", "PodExecOptions", ("create", "get")),
                    ("events", "Event", _ALL_VERBS),
                    ("namespaces", "Namespace", _ALL_VERBS),
                    ("resourcequotas", "ResourceQuota", _ALL_VERBS),
                    ("resourcequotas/status", "ResourceQuota", _SUBRESOURCE_VERBS),
                    ("limitranges", "LimitRange", _ALL_VERBS),
                    ("nodes", "Node", ("get", "list", "watch")),
                    ("persistentvolumeclaims", "PersistentVolumeClaim", _ALL_VERBS),
                    ("persistentvolumeclaims/status", "PersistentVolumeClaim", _SUBRESOURCE_VERBS),
                ],
            )
        elif path == "/apis/batch/v1":
            body = _resource_list(
                "batch/v1",
                [("jobs", "Job", _ALL_VERBS), ("jobs/status", "Job", _SUBRESOURCE_VERBS)],
            )
        elif path == "/apis/coordination.k8s.io/v1":
            body = _resource_list("coordination.k8s.io/v1", [("leases", "Lease", _ALL_VERBS)])
        elif path == "/apis/authorization.k8s.io/v1":
            body = _resource_list(
                "authorization.k8s.io/v1",
                [
                    ("selfsubjectaccessreviews", "SelfSubjectAccessReview", ("create",)),
                    ("selfsubjectrulesreviews", "SelfSubjectRulesReview", ("create",)),
                ],
            )
        elif match := _NAMESPACE.match(path):
            namespaces = self.server.state.namespaces
            self._verb = "get" if match["name"] else "list"
            authorize(self.user, self._verb, group="", resource="namespaces", name=match["name"])
            if match["name"]:
                self._send_object(namespaces.get(match["name"]), {})
                return
            items = namespaces.all()
            if self._wants_table():
                body = table("Namespace", items, now_ns=time.time_ns())
            else:
                body = {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(self.server.state.store.resource_version)},
                    "items": items,
                }
        else:
            raise StatusError(404, "the server could not find the requested resource")
        self._send_json(200, body)

    def _namespace_write(
        self, method: str, name: str | None, sub: str | None, params: dict[str, list[str]]
    ) -> None:
        """POST, PATCH, PUT, DELETE (and watch) on namespaces: cluster-scoped objects."""
        namespaces = self.server.state.namespaces
        watch = method == "GET"
        self._verb = _verb(method, name, watch=watch)
        authorize(
            self.user, self._verb, group="", resource="namespaces", subresource=sub, name=name
        )
        if watch:
            self._watch(NAMESPACES, None, name, params)
        elif method == "POST" and name is None:
            body = self._json_body()
            if not isinstance(body, dict):
                raise StatusError(400, "the request body must be a JSON object")
            self._check_fields(NAMESPACES, body, params)
            self._send_json(201, namespaces.create(body, dry_run=_dry_run(params)))
        elif method == "DELETE" and name and not sub:
            self._send_json(200, namespaces.delete(name, dry_run=_dry_run(params)))
        elif method in ("PATCH", "PUT") and name:
            namespaces.get(name)  # 404 for one that does not exist
            if not _dry_run(params):
                namespaces.materialize(name)
                self._modify(method, NAMESPACES, "", name, sub, params)
                return
            preview = deep_copy(namespaces.get(name))
            preview["metadata"]["resourceVersion"] = preview["metadata"].get("resourceVersion", "1")
            self._modify(method, NAMESPACES, "", name, sub, params, current=preview)
        else:
            raise StatusError(
                405,
                f"the server does not allow this method on the requested resource: {method}",
                reason="MethodNotAllowed",
            )

    def _access_review(self, method: str, *, rules: bool) -> None:
        if method != "POST":
            raise StatusError(405, f"{method} is not supported on this review")
        self._verb = "create"
        review = rules_review if rules else access_review
        self._send_json(201, review(self.user, self._json_body()))

    def _list(
        self, resource: Resource, namespace: str | None, params: dict[str, list[str]]
    ) -> None:
        label_selector = _param(params, "labelSelector")
        field_selector = _param(params, "fieldSelector")
        predicate = selector_matcher(resource, label_selector, field_selector)
        options = parse_list_options(
            limit=_param(params, "limit"),
            continue_token=_param(params, "continue"),
            resource_version=_param(params, "resourceVersion"),
            resource_version_match=_param(params, "resourceVersionMatch"),
        )
        single = _single_name(namespace, field_selector, options)
        pairs, rv, compacted_rv = self.server.state.store.keyed(resource, namespace, single)
        if options.continue_rv is not None and options.continue_rv < compacted_rv:
            raise expired_continue()
        if options.resource_version_match == MATCH_EXACT:
            exact = int(options.resource_version or 0)
            if exact < compacted_rv:
                raise StatusError(
                    410, f"too old resource version: {exact} ({compacted_rv + 1})", reason="Expired"
                )
        page = list_page(
            pairs,
            predicate,
            options,
            resource_version=rv,
            has_selector=bool(label_selector or field_selector),
        )
        metadata: JsonObject = {"resourceVersion": str(options.continue_rv or rv)}
        if page.continue_token:
            metadata["continue"] = page.continue_token
        if page.remaining_item_count is not None:
            metadata["remainingItemCount"] = page.remaining_item_count
        self._scanned, self._returned = page.scanned, len(page.items)
        items = page.items
        if resource is RESOURCE_QUOTAS:
            items = [self.server.state.admission.with_quota_status(dict(q)) for q in items]
        if self._wants_table():
            self._send_json(200, self._table(resource.kind, items, params, metadata))
            return
        self._send_json(
            200,
            {
                "kind": resource.list_kind,
                "apiVersion": resource.api_version,
                "metadata": metadata,
                "items": items,
            },
        )

    def _wants_table(self) -> bool:
        return wants_table(self.headers.get("Accept"))

    def _table(
        self,
        kind: str,
        objects: Any,
        params: dict[str, list[str]],
        metadata: JsonObject | None = None,
    ) -> JsonObject:
        """What `kubectl get` asks for: the apiserver's printed columns."""
        include = _param(params, "includeObject") or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise StatusError(400, f'includeObject: Unsupported value: "{include}"')
        return table(
            kind, objects, now_ns=time.time_ns(), list_metadata=metadata, include_object=include
        )

    def _send_object(self, obj: JsonObject, params: dict[str, list[str]]) -> None:
        """One object, or its one-row Table."""
        if self._wants_table():
            rv = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            self._send_json(200, self._table(obj["kind"], [obj], params, rv))
        else:
            self._send_json(200, obj)

    def _create(self, resource: Resource, namespace: str, params: dict[str, list[str]]) -> None:
        state = self.server.state
        body = self._json_body()
        dry_run = _dry_run(params)
        if not isinstance(body, dict):
            raise StatusError(400, "the request body must be a JSON object")
        if body.get("kind") not in (None, resource.kind) or body.get("apiVersion") not in (
            None,
            resource.api_version,
        ):
            raise StatusError(
                400,
                f"the body's kind/apiVersion {body.get('kind')}/{body.get('apiVersion')} does not match {resource.kind}/{resource.api_version}",
            )
        self._check_fields(resource, body, params)
        check_namespace(body, namespace)
        validate(resource, body)
        if resource is PERSISTENT_VOLUME_CLAIMS:
            check_claim(body)
        for _attempt in range(5):  # a generateName collision retries, as the apiserver does
            obj = state.store.prepare_new(resource, body, namespace)
            default_object(resource, obj)
            prepare_policy_object(resource.kind, obj)
            if resource is PERSISTENT_VOLUME_CLAIMS:
                bind_claim(obj)
            if resource is JOBS:
                self._warnings = [*self._warnings, *state.admission.admit_job(obj, namespace)]
            try:
                if resource is PODS:  # through the admission chain (a dry run too, uncharged)
                    created, warnings = state.admission.admit_pod_and(
                        obj, lambda pod: pod if dry_run else state.store.create(PODS, pod)
                    )
                    self._warnings = [*self._warnings, *warnings]
                    self._send_json(201, created)
                    return
                if dry_run:
                    self._send_json(201, obj)
                    return
                self._send_json(201, state.store.create(resource, obj))
                return
            except StatusError as exc:
                if exc.code != 409 or (body.get("metadata") or {}).get("name"):
                    raise
        raise StatusError(409, "could not generate a unique name", reason="AlreadyExists")

    def _delete(
        self, resource: Resource, namespace: str, name: str, params: dict[str, list[str]]
    ) -> None:
        state = self.server.state
        options = self._json_body() or {}
        dry_run = _dry_run(params) or _dry_run({"dryRun": options.get("dryRun") or []})
        policy = _param(params, "propagationPolicy") or options.get("propagationPolicy")
        orphan = _param(params, "orphanDependents") or options.get("orphanDependents")
        if policy is None and orphan is not None:
            policy = "Orphan" if str(orphan).lower() == "true" else "Background"
        policy = policy or default_policy(resource)
        check_policy(policy)
        current = state.store.get(resource, namespace, name)
        if dry_run:
            self._send_json(200, current)
            return
        state.deletions.append(Deletion(resource.plural, namespace, name, policy))
        gone = delete_with_policy(state.store, resource, namespace, name, policy)
        if resource in (PODS, PERSISTENT_VOLUME_CLAIMS) or policy == "Foreground":
            self._send_json(200, gone)
        else:
            details = {"name": name, "kind": resource.plural, "uid": gone["metadata"]["uid"]}
            if resource.group:
                details["group"] = resource.group
            self._send_json(200, success_body(details))

    def _modify(
        self,
        method: str,
        resource: Resource,
        namespace: str,
        name: str,
        sub: str | None,
        params: dict[str, list[str]],
        *,
        current: JsonObject | None = None,
    ) -> None:
        store = self.server.state.store
        body = self._json_body()
        dry_run = _dry_run(params)
        content_type = (
            (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        )
        if current is None:
            current = store.get(resource, namespace, name)
        if method == "PUT":
            if not isinstance(body, dict):
                raise StatusError(400, "the request body must be a JSON object")
            self._check_fields(resource, body, params)
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise StatusError(
                    409,
                    f'Operation cannot be fulfilled on {resource.plural} "{name}": the object has been modified; please apply your changes to the latest version and try again',
                    reason="Conflict",
                )
            patched = deep_copy(body)
        else:
            patched = apply_patch(current, body, content_type)
            self._check_fields(resource, patched, params)
        server_owned = ("uid", "creationTimestamp", "namespace", "name", "resourceVersion")

        def mutate(obj: JsonObject) -> None:
            if sub == "status":
                obj["status"] = patched.get("status", obj.get("status"))
                return
            status = obj.get("status")
            meta = obj["metadata"]
            fresh_meta = dict(patched.get("metadata") or {})
            for key in server_owned:
                if key in meta:
                    fresh_meta[key] = meta[key]
            obj.clear()
            obj.update(patched)
            obj["metadata"] = fresh_meta
            obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
            if status is not None:
                obj["status"] = status

        def change(obj: JsonObject) -> None:
            mutate(obj)
            if resource is NAMESPACES:  # the apiserver keeps this label (namespace strategy)
                obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            elif resource in (RESOURCE_QUOTAS, LIMIT_RANGES) and sub != "status":
                prepare_policy_object(resource.kind, obj)

        if resource is LEASES:  # an update is validated like a create
            preview = deep_copy(current)
            change(preview)
            validate(resource, preview)
        elif resource is NAMESPACES:
            preview = deep_copy(current)
            change(preview)
            check_namespace_object(preview)
        if dry_run:
            preview = deep_copy(current)
            change(preview)
            self._send_json(200, preview)
            return
        self._send_json(200, store.update(resource, namespace, name, change))

    # -- exec ----------------------------------------------------------------------------------

    def _exec(self, method: str, namespace: str, name: str, params: dict[str, list[str]]) -> None:
        """pods/exec: checks in the apiserver's order (ExecREST.Connect, pod.ExecLocation:
        pkg/registry/core/pod/strategy.go streamLocation, validateContainer), then the
        kubelet's (container running), then the WebSocket upgrade (see exec_session)."""
        state = self.server.state
        if method not in ("GET", "POST"):
            raise StatusError(
                405,
                f"the server does not allow this method on the requested resource: {method}",
                reason="MethodNotAllowed",
            )
        upgrade = is_upgrade_request(self.headers.get("Upgrade"), self.headers.get("Connection"))
        if method == "GET" and upgrade:
            # A WebSocket upgrade is a GET, authorized as `get`; since 1.35 it needs `create`
            # as SPDY's POST does (feature gate AuthorizePodWebsocketUpgradeCreatePermission,
            # beta, on by default: kubernetes/website feature-gates/
            # AuthorizePodWebsocketUpgradeCreatePermission.md).
            authorize(
                self.user, "create", group="", resource="pods", subresource="exec",
                namespace=namespace, name=name,
            )  # fmt: skip
        options = exec_options(params)
        pod = state.store.get(PODS, namespace, name)
        container = exec_container(pod, options.container)
        if not pod["spec"].get("nodeName"):
            raise StatusError(400, f"pod {name} does not have a host assigned")
        if not upgrade:
            if "spdy" in (self.headers.get("Upgrade") or "").lower():
                raise StatusError(
                    400,
                    "the pegboard sandbox serves exec over WebSocket only "
                    f"({', '.join(SUPPORTED)}); SPDY/3.1 is not modelled",
                )
            # UpgradeAwareHandler with UpgradeRequired (pkg/registry/core/pod/rest/
            # subresources.go newThrottledUpgradeAwareProxyHandler)
            raise StatusError(400, "Upgrade request required")
        key = self.headers.get("Sec-WebSocket-Key") or ""
        if (self.headers.get("Sec-WebSocket-Version") or "").strip() != "13" or not key:
            self._send_plain(400, "websocket: unsupported version or missing key\n")
            return
        protocol = negotiate(
            offered_protocols(self.headers.get_all("Sec-WebSocket-Protocol") or [])
        )
        if protocol is None:  # golang.org/x/net/websocket answers a failed handshake with 403
            self._send_plain(403, "")
            return
        uid = pod["metadata"]["uid"]
        if not protocol.translated and state.kubelet.running_container(uid, container) is None:
            # The kubelet's own refusal, proxied as it is (server.go getExec: streaming.WriteError)
            self._send_plain(500, f"container not found ({json.dumps(container)})")
            return
        self._status = 101
        self._account()
        self._streaming = True
        state.stats.stream_opened()
        self.close_connection = True
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(key))
        if protocol.name:
            self.send_header("Sec-WebSocket-Protocol", protocol.name)
        self.end_headers()
        self.wfile.flush()

        def start(**stdio: Any) -> subprocess.Popen[bytes]:
            return state.kubelet.exec_process(uid, container, options.command, **stdio)

        ExecSession(self.connection, protocol, options, stopping=state.stopping).run(start)

    def _default_node(self, name: str | None, params: dict[str, list[str]]) -> None:
        """The one node of a sandbox without declared nodes (it fits every pod)."""
        node = self.server.state.scheduler.default_node()
        if name is not None:
            if name != node["metadata"]["name"]:
                raise StatusError(404, f'nodes "{name}" not found', reason="NotFound",
                                  details={"name": name, "kind": "nodes"})  # fmt: skip
            self._send_object(node, params)
            return
        metadata = {"resourceVersion": str(self.server.state.store.resource_version)}
        if self._wants_table():
            self._send_json(200, self._table("Node", [node], params, metadata))
            return
        self._send_json(
            200, {"kind": "NodeList", "apiVersion": "v1", "metadata": metadata, "items": [node]}
        )

    def _send_plain(self, code: int, text: str) -> None:
        data = text.encode()
        self._status = code
        self._account()
        self.close_connection = True
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    # -- streams -----------------------------------------------------------------------------------

    def _watch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str | None,
        params: dict[str, list[str]],
    ) -> None:
        state = self.server.state
        store = state.store
        predicate = selector_matcher(
            resource, _param(params, "labelSelector"), _param(params, "fieldSelector")
        )
        if name is not None:
            by_fields = predicate
            predicate = lambda obj: obj["metadata"].get("name") == name and by_fields(obj)  # noqa: E731
        timeout = _int_param(params, "timeoutSeconds")
        deadline = time.monotonic() + (timeout if timeout and timeout > 0 else 1800)
        start_rv = _param(params, "resourceVersion")
        event_line = _event_line
        if self._wants_table():  # `kubectl get -w`: each object as a one-row Table

            def event_line(type_: str, obj: JsonObject) -> bytes:
                return _event_line(type_, self._table(resource.kind, [obj], params))

        lines: list[bytes] = []
        if start_rv in (None, "", "0"):
            # The current objects first, as ADDED: one key when the selector pins a name.
            single = name or _single_name(namespace, _param(params, "fieldSelector"), None)
            pairs, rv, _ = store.keyed(resource, namespace, single)
            lines = [event_line("ADDED", item) for _, item in pairs if predicate(item)]
            self._scanned = len(pairs)
        else:
            try:
                rv = int(start_rv)
            except ValueError:
                rv = -1
        self._start_chunked("application/json")
        if lines:
            self._chunk(b"".join(lines))
        while not (state.stopping.is_set() or store.stopping or self._client_gone()):
            try:
                changes = store.changes_after(rv)
            except StatusError as exc:
                self._chunk(_event_line("ERROR", exc.body()))
                break
            lines = []
            for change in changes:
                rv = change.resource_version
                if change.resource is not resource:
                    continue
                if (
                    namespace is not None
                    and change.object["metadata"].get("namespace") != namespace
                ):
                    continue
                now_matches = predicate(change.object)
                before_matches = change.previous is not None and predicate(change.previous)
                if change.type == "DELETED":
                    if before_matches:
                        lines.append(event_line("DELETED", change.object))
                elif now_matches:
                    lines.append(
                        event_line("MODIFIED" if before_matches else "ADDED", change.object)
                    )
                elif before_matches:
                    lines.append(event_line("DELETED", change.object))
            if lines:
                self._chunk(b"".join(lines))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if not changes:
                store.wait(rv, min(remaining, _WAIT_SLICE))
        self._end_chunked()

    def _log(self, namespace: str, name: str, params: dict[str, list[str]]) -> None:
        state = self.server.state
        pod = state.store.get(PODS, namespace, name)
        container = log_container(pod, _param(params, "container"))
        if _flag(params, "previous"):
            raise StatusError(
                400, f'previous terminated container "{container}" in pod "{name}" not found'
            )
        since_seconds = _int_param(params, "sinceSeconds")
        since_time = _param(params, "sinceTime")
        if since_seconds is not None and since_time:
            raise StatusError(
                422, "at most one of sinceTime or sinceSeconds may be specified", reason="Invalid"
            )
        since_ns: int | None = None
        if since_time:
            # The apiserver passes sinceTime on to the kubelet formatted as RFC 3339 without
            # fractions (LogLocation), so a real cluster replays from the start of the second.
            since_ns = parse_since_time(since_time) // 1_000_000_000 * 1_000_000_000
        elif since_seconds is not None:
            if since_seconds < 1:
                raise StatusError(
                    422, "sinceSeconds: Invalid value: must be greater than 0", reason="Invalid"
                )
            since_ns = time.time_ns() - since_seconds * 1_000_000_000
        query = LogQuery(
            timestamps=_flag(params, "timestamps"),
            since_ns=since_ns,
            tail_lines=_int_param(params, "tailLines"),
            limit_bytes=_int_param(params, "limitBytes"),
        )
        log = state.kubelet.container_log(pod["metadata"]["uid"], container)
        if log is None:
            raise not_started(pod, container)
        self._stream_log(log, query, follow=_flag(params, "follow"), pod=name)

    def _stream_log(self, log: Any, query: LogQuery, *, follow: bool, pod: str) -> None:
        state = self.server.state
        drop = state.faults.take_log_drop(pod)
        budget = state.faults.log_budget(query.limit_bytes)
        start = log.start(query)
        index = start.index
        # ReadLogs' rendering: one prefix per line (kubelet >= 1.26) or per record (pre-1.26).
        render = LogRenderer(query, start, rendering=state.faults.log_rendering)
        sent = 0
        self._start_chunked("text/plain")
        while not state.stopping.is_set():
            chunks, ended = log.wait_chunks(index, _WAIT_SLICE if follow else 0.0)
            if not chunks:
                if ended or not follow or self._client_gone():
                    break
                continue
            index += len(chunks)
            batch: list[bytes | memoryview] = []
            size = 0
            for data, ts in chunks:
                parts = render.parts(data, ts)
                batch += parts
                size += sum(map(len, parts))
                if size >= _STREAM_BATCH:
                    sent = self._send_log_batch(batch, sent, drop, budget)
                    batch, size = [], 0
            if batch:
                sent = self._send_log_batch(batch, sent, drop, budget)
            if budget is not None and sent >= budget:
                break
            if not follow:
                break
        self._end_chunked()

    def _send_log_batch(
        self, batch: list[bytes | memoryview], sent: int, drop: Any, budget: int | None
    ) -> int:
        if budget is None and drop is None:
            if type(self.connection) is socket.socket:
                return sent + self._send_chunk_parts(batch)
            return sent + self._send_chunk_records(batch)
        data = b"".join(batch)
        if budget is not None:
            data = data[: max(0, budget - sent)]
        if drop is not None and sent + len(data) >= drop.after_bytes:
            keep = drop.after_bytes - sent
            if drop.mode == "eof":
                self._chunk(data[:keep])
                self._end_chunked()
                raise StreamAborted
            # Announce the whole chunk but deliver only part of it, then reset the connection.
            self.wfile.write(b"%x\r\n" % len(data) + data[:keep])
            self._abort_connection()
        self._chunk(data)
        return sent + len(data)

    def _send_chunk_parts(self, parts: list[bytes | memoryview]) -> int:
        """One HTTP chunk from buffers, written with sendmsg: no joining copy. Its size."""
        size = sum(map(len, parts))
        buffers = [memoryview(part) for part in (b"%x\r\n" % size, *parts, b"\r\n")]
        while buffers:
            written = self.connection.sendmsg(buffers[:_IOV_MAX])
            while buffers and written >= len(buffers[0]):
                written -= len(buffers.pop(0))
            if written:
                buffers[0] = buffers[0][written:]
        return size

    def _send_chunk_records(self, parts: list[bytes | memoryview]) -> int:
        """One HTTP chunk from buffers over TLS (an SSLSocket has no sendmsg), without joining
        them: a join of a 4 MiB batch costs two copies and, in a fresh allocation, a page fault
        per 4 KiB, more than the encryption. The bytes go out in whole records: the small pieces
        (chunk header, timestamp prefix, a part's last partial record, trailer) gathered in one
        buffer of at most a record, the rest of each part straight to SSL_write. Its size."""
        size = sum(map(len, parts))
        pending = bytearray(b"%x\r\n" % size)
        for part in parts:
            if len(pending) + len(part) <= _TLS_RECORD:
                pending += part
                continue
            view = memoryview(part)
            fill = _TLS_RECORD - len(pending)
            pending += view[:fill]
            self.connection.sendall(pending)
            whole = fill + (len(view) - fill) // _TLS_RECORD * _TLS_RECORD
            if whole > fill:
                self.connection.sendall(view[fill:whole])
            pending = bytearray(view[whole:])
        pending += b"\r\n"
        self.connection.sendall(pending)
        return size


def _verb(method: str, name: str | None, *, watch: bool) -> str:
    """The apiserver's verb for a request, as RBAC and its metrics name it."""
    if watch:
        return "watch"
    if method == "GET":
        return "get" if name else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def _single_name(
    namespace: str | None, field_selector: str | None, options: ListOptions | None
) -> str | None:
    """The one name a LIST or watch reads, when its field selector pins metadata.name in a
    namespace and it continues no earlier page (the apiserver's SelectionPredicate.MatchesSingle
    and KeyFunc): then only that key is read, whatever else the namespace holds."""
    if namespace is None or (options is not None and options.continue_start is not None):
        return None
    return required_field_value(field_selector, "metadata.name")


def _dry_run(params: dict[str, list[str]]) -> bool:
    values = params.get("dryRun") or []
    for value in values:
        if value != "All":
            raise StatusError(400, f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def _event_line(type_: str, obj: JsonObject) -> bytes:
    return json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"


_ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
_SUBRESOURCE_VERBS = ("get", "patch", "update")
# Short names and categories as the apiserver lists them (`kubectl get po`, `kubectl get all`).
_SHORT_NAMES = {
    "pods": ["po"],
    "events": ["ev"],
    "namespaces": ["ns"],
    "resourcequotas": ["quota"],
    "limitranges": ["limits"],
    "nodes": ["no"],
    "persistentvolumeclaims": ["pvc"],
}
_CATEGORIES = {"pods": ["all"], "jobs": ["all"]}


def _resource_list(
    group_version: str, entries: list[tuple[str, str, tuple[str, ...]]]
) -> JsonObject:
    resources = []
    for name, kind, verbs in entries:
        entry: JsonObject = {
            "name": name,
            "singularName": "" if "/" in name else kind.lower(),
            "namespaced": kind
            not in ("Namespace", "Node", "SelfSubjectAccessReview", "SelfSubjectRulesReview"),
            "kind": kind,
            "verbs": list(verbs),
        }
        if name in _SHORT_NAMES:
            entry["shortNames"] = _SHORT_NAMES[name]
        if name in _CATEGORIES:
            entry["categories"] = _CATEGORIES[name]
        resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


__all__ = [
    "JOBS",
    "ApiHandler",
    "ApiState",
    "Deletion",
    "RecordedRequest",
    "SandboxHTTPServer",
]
