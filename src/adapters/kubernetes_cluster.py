"""KubernetesCluster: the Cluster port over the official client's HTTP layer, objects kept raw.

One RestApi (the client's REST layer: one urllib3 pool) per adapter. Requests go through the
client's own auth hooks, TLS and body encoding; ApiClient, with pydantic, is never imported
(kubernetes_rest.py). Responses are read unparsed and decoded with `json.loads`, so objects are
exactly the apiserver's dicts: no typed-model round trip, no pydantic validation on the hot
path. `kubernetes` is imported on first use, never at import.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pegboard.domain.errors import NotFound, PortError, Transient
from pegboard.domain.ports.cluster import (
    ClusterTarget,
    ExecInput,
    ExecResult,
    JsonObject,
    ListPage,
    LogStreamDropped,
    OutputSink,
    ResourceKind,
    WatchEvent,
)

from . import kubernetes_imports
from .kubernetes_credentials import SERVICE_ACCOUNT_DIR, resolve_credentials
from .kubernetes_errors import (
    Gone,
    error_for_status,
    error_for_transport,
    status_message,
    transport_reason,
)
from .kubernetes_warnings import parse_warning_headers

_API = {
    ResourceKind.POD: ("/api/v1", "pods", "v1"),
    ResourceKind.JOB: ("/apis/batch/v1", "jobs", "batch/v1"),
    ResourceKind.LEASE: ("/apis/coordination.k8s.io/v1", "leases", "coordination.k8s.io/v1"),
    ResourceKind.PERSISTENT_VOLUME_CLAIM: ("/api/v1", "persistentvolumeclaims", "v1"),
}
_KIND_BY_NAME = {kind.value: kind for kind in ResourceKind}
WATCH_READ_SLACK = 5.0  # client read timeout above the server's timeoutSeconds
# Idle connections the pool keeps per host. Connections open only on demand, so a plain run still
# sends its unary calls over one; but the orphan sweep deletes up to 16 at once (plus a watch and
# a log stream), and the client's default (5 x CPUs) would drop and re-open the extra ones.
POOL_MAXSIZE = 20
MAX_EARLY_WATCH_ENDS = 5
LOG_READ_BYTES = 256 * 1024  # log stream read size (see KubernetesLogStream)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What a broken connection raises out of urllib3 and http.client (never ApiException)."""
    import http.client

    import urllib3.exceptions as u3

    return (u3.HTTPError, http.client.HTTPException, OSError)


def _received_before_the_break(exc: BaseException) -> bytes:
    """The content bytes a read that broke had received: http.client's `_safe_read` raises
    IncompleteRead with them (`partial`), and urllib3 raises ProtocolError from it. A break in a
    two-byte read is left out: it may be the CRLF after a chunk, not content (and a content
    byte left out is read again from sinceTime, as any cut record is)."""
    import http.client

    error: BaseException | None = exc
    for _ in range(8):  # the chain is short; never loop on a cyclic one
        if error is None or isinstance(error, http.client.IncompleteRead):
            break
        error = error.__cause__ or error.__context__
    if not isinstance(error, http.client.IncompleteRead):
        return b""
    partial, expected = error.partial, error.expected or 0
    return partial if isinstance(partial, bytes) and len(partial) + expected > 2 else b""


class KubernetesLogStream:
    """Raw log chunks of one follow (or plain) request; close() from any thread unblocks it."""

    def __init__(self, response: Any, *, description: str) -> None:
        self._response = response
        self._description = description
        self._closed = False
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[bytes]:
        response = self._response
        broken: tuple[type[BaseException], ...] = (*_transport_errors(), ValueError, AttributeError)
        try:
            # Chunked (what the apiserver sends): pieces of at most LOG_READ_BYTES, however big
            # the server's HTTP chunks, each decoded while still in the CPU cache; a live
            # stream's small chunks still arrive at once (a read never waits past its chunk).
            if response.chunked and response.supports_chunked_reads():
                chunks = response.read_chunked(LOG_READ_BYTES, decode_content=False)
            else:
                chunks = response.stream(64 * 1024, decode_content=False)
            for chunk in chunks:
                if chunk:
                    yield chunk
        except broken as exc:
            if self._closed:  # close() broke the read on purpose
                return
            received = _received_before_the_break(exc)
            if received:
                # Bytes the server did send before the connection broke: the decoder needs them
                # (a break before the first record was passed on, followed by a rotation,
                # looked like a log that began later: output lost without a word).
                yield received
            reason = transport_reason(exc)
            raise LogStreamDropped(f"log stream of {self._description} dropped: {reason}") from exc
        finally:
            self._finish()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        shutdown = getattr(self._response, "shutdown", None)
        try:
            if shutdown is not None:
                shutdown()  # urllib3 >= 2.3: wakes a reader blocked in another thread
            self._response.close()
        except Exception:  # closing a broken connection may itself fail; nothing to report
            pass

    def _finish(self) -> None:
        try:
            self._response.close()
            self._response.release_conn()
        except Exception:
            pass


class KubernetesCluster:
    """The Cluster port against a real apiserver (or the sandbox), credentials as kubectl does."""

    def __init__(
        self,
        *,
        context: str | None = None,
        env: Mapping[str, str] | None = None,
        home: Path | None = None,
        service_account_dir: Path = SERVICE_ACCOUNT_DIR,
        lenient_tls: bool = False,
        connect_timeout: float = 10.0,
        read_timeout: float = 30.0,
        log_read_timeout: float = 600.0,
        pool_maxsize: int = POOL_MAXSIZE,
        monotonic: Callable[[], float] = time.monotonic,
        on_call: Callable[[str, float, str], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
        exec_subprotocols: tuple[str, ...] | None = None,
    ) -> None:
        self._context = context
        # what an exec offers the apiserver (None: the client's v5, v4); tests pin v4 with it
        self._exec_subprotocols = exec_subprotocols
        # told each `Warning: 299` text an answer carries (pegboard.app.shared.api_warnings)
        self._on_warning = on_warning
        # `-v`: told (what, seconds, outcome) after every request (pegboard.app.shared.call_trace)
        self._on_call = on_call
        self._env = dict(os.environ if env is None else env)
        self._home = home if home is not None else Path.home()
        self._service_account_dir = service_account_dir
        self._lenient_tls = lenient_tls
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        # A silent container holds a follow open; past this the stream counts as dropped.
        self._log_read_timeout = log_read_timeout
        self._pool_maxsize = pool_maxsize
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._api: Any = None
        self._target: ClusterTarget | None = None
        self._host = ""

    # ------------------------------------------------------------------ connection

    def _client(self) -> Any:
        with self._lock:
            if self._api is None:
                credentials = resolve_credentials(
                    context=self._context,
                    env=self._env,
                    home=self._home,
                    service_account_dir=self._service_account_dir,
                )
                self._api = self._build_client(credentials.configuration)
                self._target = credentials.target
                self._host = credentials.configuration.host
            return self._api

    def _build_client(self, configuration: Any) -> Any:
        kubernetes_imports.lean_kubernetes()
        from .kubernetes_rest import RestApi

        # urllib3's own retries would hide errors and multiply latency; callers own retry policy.
        configuration.retries = False
        configuration.connection_pool_maxsize = self._pool_maxsize
        try:
            from kubernetes.utils.keepalive import tcp_keepalive_socket_options

            # Keepalive probes notice a half-open watch or follow; the list keeps TCP_NODELAY.
            configuration.socket_options = tcp_keepalive_socket_options()
        except ImportError:  # older clients: urllib3's defaults (TCP_NODELAY) stay
            pass
        api = RestApi(configuration)
        if self._lenient_tls:
            api.rest_client.pool_manager.connection_pool_kw["ssl_context"] = _lenient_context(
                configuration
            )
        return api

    def close(self) -> None:
        """Close the connection pool (the adapter reconnects if used again)."""
        with self._lock:
            if self._api is not None:
                self._api.rest_client.close()

    def target(self) -> ClusterTarget:
        self._client()
        assert self._target is not None
        return self._target

    def namespace_names(self, *, timeout: float) -> builtins.list[str]:
        """The cluster's namespaces (for shell completion; not part of the Cluster port).
        `timeout` bounds the connect and the read; raises PortError like every call."""
        data = self._json("GET", "/api/v1/namespaces", timeout=(timeout, timeout))
        items = data.get("items") or []
        return sorted(
            str(item["metadata"]["name"])
            for item in items
            if isinstance(item, dict)
            and isinstance(item.get("metadata"), dict)
            and item["metadata"].get("name")
        )

    # ------------------------------------------------------------------ HTTP plumbing

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: builtins.list[tuple[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """_send, reported to `on_call` with its duration (to the response's headers)."""
        if self._on_call is None:
            return self._send(method, path, query=query, **kwargs)
        what = f"{method} {path}" + ("?" + "&".join(f"{k}={v}" for k, v in query) if query else "")
        started = time.perf_counter()
        outcome = "error"
        try:
            response = self._send(method, path, query=query, **kwargs)
            outcome = str(response.status)
            return response
        except PortError as exc:
            outcome = str(exc.status) if exc.status else type(exc).__name__
            raise
        finally:
            self._on_call(what, time.perf_counter() - started, outcome)

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: builtins.list[tuple[str, Any]] | None = None,
        body: Mapping[str, Any] | None = None,
        timeout: tuple[float, float] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """Send one request; a 2xx urllib3 response (unread), or the mapped PortError."""
        api = self._client()  # first: it imports the client lean
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            request = api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query or [],
                header_params=headers,
                body=dict(body) if body is not None else None,
                auth_settings=["BearerToken"],
            )
            response = api.call_api(
                *request,
                _request_timeout=timeout or (self._connect_timeout, self._read_timeout),
            ).response
        except ApiException as exc:  # the REST layer wraps TLS failures as status 0
            if not exc.status:
                raise error_for_transport(exc, host=self._host) from exc
            message = status_message(exc.body, exc.reason or f"HTTP {exc.status}")
            raise error_for_status(exc.status, message) from exc
        except _transport_errors() as exc:
            raise error_for_transport(exc, host=self._host) from exc
        if not 200 <= response.status < 300:
            try:
                data = response.data
            except _transport_errors():
                data = b""
            finally:
                response.release_conn()
            raise error_for_status(
                response.status, status_message(data, response.reason or f"HTTP {response.status}")
            )
        if self._on_warning is not None and "Warning" in response.headers:
            for text in parse_warning_headers(response.headers.getlist("Warning")):
                self._on_warning(text)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        response = self._open(method, path, **kwargs)
        try:
            data = response.data
        except _transport_errors() as exc:
            raise error_for_transport(exc, host=self._host) from exc
        finally:
            response.release_conn()
        try:
            result = json.loads(data)
        except ValueError as exc:
            raise Transient(f"the Kubernetes API sent a non-JSON answer for {path}") from exc
        if not isinstance(result, dict):
            raise Transient(f"the Kubernetes API sent an unexpected answer for {path}")
        return result

    @staticmethod
    def _path(kind: ResourceKind, namespace: str, name: str | None = None) -> str:
        prefix, plural, _ = _API[kind]
        path = f"{prefix}/namespaces/{quote(namespace, safe='')}/{plural}"
        return f"{path}/{quote(name, safe='')}" if name is not None else path

    @staticmethod
    def _selectors(label: str | None, field: str | None) -> builtins.list[tuple[str, Any]]:
        query: builtins.list[tuple[str, Any]] = []
        if label:
            query.append(("labelSelector", label))
        if field:
            query.append(("fieldSelector", field))
        return query

    # ------------------------------------------------------------------ the Cluster port

    def create(
        self, manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False
    ) -> JsonObject:
        kind = _KIND_BY_NAME.get(str(manifest.get("kind")))
        if kind is None:
            raise PortError(f"cannot create kind {manifest.get('kind')!r}: only Pod, Job and Lease")
        query = [("dryRun", "All")] if dry_run else []
        return self._json("POST", self._path(kind, namespace), query=query, body=manifest)

    def can_i(
        self, verb: str, resource: str, *, namespace: str, group: str = "", subresource: str = ""
    ) -> bool | None:
        # authorization.k8s.io/v1 SelfSubjectAccessReview (k8s.io/api/authorization/v1/types.go):
        # created, never stored; status.allowed is the authorizer's decision for these credentials.
        attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
        if subresource:
            attributes["subresource"] = subresource
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        try:
            answer = self._json(
                "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review
            )
        except PortError:
            return None
        allowed = (answer.get("status") or {}).get("allowed")
        return allowed if isinstance(allowed, bool) else None

    def read(self, kind: ResourceKind, name: str, *, namespace: str) -> JsonObject | None:
        try:
            return self._json("GET", self._path(kind, namespace, name))
        except NotFound:
            return None

    def _list(
        self,
        kind: ResourceKind,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
    ) -> tuple[builtins.list[JsonObject], str]:
        page = self.list_page(
            kind, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return page.items, page.resource_version

    def list_page(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage:
        query = self._selectors(label_selector, field_selector)
        for key, value in (
            ("limit", limit),
            ("continue", continue_token),
            ("resourceVersion", resource_version),
            ("resourceVersionMatch", resource_version_match),
        ):
            if value is not None and value != "":
                query.append((key, value))
        result = self._json("GET", self._path(kind, namespace), query=query)
        _, _, api_version = _API[kind]
        items = result.get("items") or []
        for item in items:  # list items come without kind/apiVersion; give them the watch's shape
            item.setdefault("kind", kind.value)
            item.setdefault("apiVersion", api_version)
        meta = result.get("metadata") or {}
        return ListPage(
            items, str(meta.get("resourceVersion", "")), str(meta.get("continue") or "") or None
        )

    def list(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[JsonObject]:
        return self._list(kind, namespace, label_selector, field_selector)[0]

    def watch(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        deadline = self._monotonic() + timeout
        if label_selector is None and _names_one_object(field_selector):
            # One object by name: a watch without a resourceVersion starts with its current
            # state as ADDED (the apiserver's "get state and start at most recent"), one request
            # instead of a LIST and a watch; resuming from that object's resourceVersion misses
            # nothing, since no other object matches.
            selectors = self._selectors(label_selector, field_selector)
            return self._watch(kind, namespace, selectors, [], "", deadline)
        items, version = self._list(kind, namespace, label_selector, field_selector)
        return self._watch(
            kind,
            namespace,
            self._selectors(label_selector, field_selector),
            items,
            version,
            deadline,
        )

    def watch_events(
        self,
        *,
        namespace: str,
        involved_name: str,
        involved_uid: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        """A watch without a resourceVersion: the server sends the current Events as ADDED first
        (one request instead of a LIST and a watch), then resumes from the last version seen."""
        deadline = self._monotonic() + timeout
        selectors = [("fieldSelector", _involved_selector(involved_name, involved_uid))]
        return self._watch(None, namespace, selectors, [], "", deadline)

    def _watch(
        self,
        kind: ResourceKind | None,  # None: Events
        namespace: str,
        selectors: builtins.list[tuple[str, Any]],
        items: builtins.list[JsonObject],
        version: str,
        deadline: float,
    ) -> Iterator[WatchEvent]:
        known: dict[str, JsonObject] = {}
        for item in items:
            known[item["metadata"]["uid"]] = item
            yield WatchEvent("ADDED", item)
        early_ends = 0  # connections in a row that ended early with nothing: bound the re-watching
        while True:
            remaining = deadline - self._monotonic()
            if remaining <= 0:
                return
            delivered = False
            try:
                for event in self._watch_once(kind, namespace, selectors, version, remaining):
                    delivered = True
                    if event.type == "BOOKMARK":
                        version = event.object["metadata"]["resourceVersion"]
                        continue
                    meta = event.object["metadata"]
                    version = meta.get("resourceVersion", version)
                    if event.type == "DELETED":
                        known.pop(meta.get("uid", ""), None)
                    else:
                        known[meta.get("uid", "")] = event.object
                    yield event
                    if self._monotonic() >= deadline:
                        return
            except Gone:
                # Too old to resume: list again and replay what changed meanwhile.
                fresh, version = self._relist(kind, namespace, selectors)
                fresh_uids = {item["metadata"]["uid"] for item in fresh}
                for uid, old in builtins.list(known.items()):
                    if uid not in fresh_uids:
                        del known[uid]
                        yield WatchEvent("DELETED", old)
                for item in fresh:
                    uid = item["metadata"]["uid"]
                    seen = known.get(uid)
                    known[uid] = item
                    if seen is None:
                        yield WatchEvent("ADDED", item)
                    elif seen["metadata"].get("resourceVersion") != item["metadata"].get(
                        "resourceVersion"
                    ):
                        yield WatchEvent("MODIFIED", item)
            except _WatchBroke:
                pass  # the connection broke: resume from the last resourceVersion
            early_ends = 0 if delivered else early_ends + 1
            if early_ends > MAX_EARLY_WATCH_ENDS and deadline - self._monotonic() > 1:
                what = kind.value if kind is not None else "Event"
                raise Transient(
                    f"the watch on {what}s in {namespace} keeps ending early at {self._host}"
                )

    def _relist(
        self,
        kind: ResourceKind | None,
        namespace: str,
        selectors: builtins.list[tuple[str, Any]],
    ) -> tuple[builtins.list[JsonObject], str]:
        if kind is not None:
            return self._list(kind, namespace, *_selector_values(selectors))
        result = self._json("GET", self._events_path(namespace), query=selectors)
        items: builtins.list[JsonObject] = result.get("items") or []
        return items, str((result.get("metadata") or {}).get("resourceVersion", ""))

    @staticmethod
    def _events_path(namespace: str) -> str:
        return f"/api/v1/namespaces/{quote(namespace, safe='')}/events"

    def _watch_once(
        self,
        kind: ResourceKind | None,
        namespace: str,
        selectors: builtins.list[tuple[str, Any]],
        version: str,
        remaining: float,
    ) -> Iterator[WatchEvent]:
        server_timeout = max(1, math.ceil(remaining))
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", server_timeout),
            *selectors,
        ]
        if version:
            query.append(("resourceVersion", version))
        path = self._path(kind, namespace) if kind is not None else self._events_path(namespace)
        response = self._open(
            "GET",
            path,
            query=query,
            timeout=(self._connect_timeout, server_timeout + WATCH_READ_SLACK),
        )
        try:
            for line in _json_lines(response):
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    code = int(obj.get("code") or 500)
                    message = status_message(json.dumps(obj), f"watch error {code}")
                    raise error_for_status(code, message)
                yield WatchEvent(str(event.get("type")), obj)
        except _transport_errors() as exc:
            raise _WatchBroke(transport_reason(exc)) from exc
        except ValueError as exc:  # a line cut off mid-way by a broken connection
            raise _WatchBroke(str(exc)) from exc
        finally:
            response.close()
            response.release_conn()

    def stream_logs(
        self,
        pod: str,
        *,
        namespace: str,
        container: str,
        since_time: str | None = None,
        timestamps: bool = True,
        follow: bool = True,
        tail_lines: int | None = None,
    ) -> KubernetesLogStream:
        query: builtins.list[tuple[str, Any]] = [("container", container)]
        if follow:
            query.append(("follow", "true"))
        if timestamps:
            query.append(("timestamps", "true"))
        if since_time:
            query.append(("sinceTime", since_time))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        read_timeout = self._log_read_timeout if follow else self._read_timeout
        response = self._open(
            "GET",
            self._path(ResourceKind.POD, namespace, pod) + "/log",
            query=query,
            timeout=(self._connect_timeout, read_timeout),
        )
        return KubernetesLogStream(response, description=f"{namespace}/{pod}/{container}")

    def exec(
        self,
        pod: str,
        command: Sequence[str],
        *,
        namespace: str,
        container: str | None = None,
        stdin: ExecInput = None,
        on_stdout: OutputSink | None = None,
        on_stderr: OutputSink | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        api = self._client()  # first: it imports the client lean
        from .kubernetes_exec import PROTOCOLS, exec_in_pod  # websocket-client, on first exec

        started = time.perf_counter()
        outcome = "error"
        try:
            result = exec_in_pod(
                api,
                host=self._host,
                namespace=namespace,
                pod=pod,
                command=builtins.list(command),
                container=container,
                stdin=stdin,
                on_stdout=on_stdout,
                on_stderr=on_stderr,
                timeout=timeout,
                subprotocols=self._exec_subprotocols or PROTOCOLS,
                handshake_timeout=self._read_timeout,  # connect, TLS, upgrade: each this long
            )
            outcome = f"exit {result.exit_code}"
            return result
        except PortError as exc:
            outcome = str(exc.status) if exc.status else type(exc).__name__
            raise
        finally:
            if self._on_call is not None:
                what = f"EXEC {namespace}/{pod} {command[0] if command else ''}"
                self._on_call(what, time.perf_counter() - started, outcome)

    def list_events(
        self, *, namespace: str, involved_name: str, involved_uid: str | None = None
    ) -> builtins.list[JsonObject]:
        selector = _involved_selector(involved_name, involved_uid)
        result = self._json(
            "GET", self._events_path(namespace), query=[("fieldSelector", selector)]
        )
        items: builtins.list[JsonObject] = result.get("items") or []
        for item in items:
            item.setdefault("kind", "Event")
            item.setdefault("apiVersion", "v1")
        return items

    def replace(
        self, kind: ResourceKind, name: str, obj: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        return self._json("PUT", self._path(kind, namespace, name), body=obj)

    def patch(
        self, kind: ResourceKind, name: str, patch: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        return self._json(
            "PATCH",
            self._path(kind, namespace, name),
            body=patch,
            content_type="application/merge-patch+json",
        )

    def delete(
        self, kind: ResourceKind, name: str, *, namespace: str, propagation: str = "Background"
    ) -> bool:
        # DeleteOptions as a query parameter (the apiserver takes both): a request without a body
        # goes out in one write, which matters when the sweep sends hundreds.
        query = [("propagationPolicy", propagation)]
        try:
            self._json("DELETE", self._path(kind, namespace, name), query=query)
        except NotFound:
            return False
        return True


class _WatchBroke(Exception):
    """A watch connection ended before its deadline (reset, cut-off line)."""


def _involved_selector(name: str, uid: str | None) -> str:
    selector = f"involvedObject.name={name}"
    return f"{selector},involvedObject.uid={uid}" if uid else selector


def _names_one_object(field_selector: str | None) -> bool:
    """`metadata.name=X` (alone, or `==`): the selector matches at most one object."""
    if not field_selector or "," in field_selector or "!=" in field_selector:
        return False
    key, _, value = field_selector.replace("==", "=").partition("=")
    return key.strip() == "metadata.name" and bool(value.strip())


def _selector_values(selectors: builtins.list[tuple[str, Any]]) -> tuple[str | None, str | None]:
    values = dict(selectors)
    return values.get("labelSelector"), values.get("fieldSelector")


def _json_lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a chunked (or plain) streaming response."""
    if response.chunked and response.supports_chunked_reads():
        chunks = response.read_chunked(decode_content=True)
    else:
        chunks = response.stream(64 * 1024, decode_content=True)
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _lenient_context(configuration: Any) -> Any:
    """Verification as usual, minus VERIFY_X509_STRICT (Python 3.13+ rejects some cluster CAs)."""
    import ssl

    from urllib3.util.ssl_ import create_urllib3_context

    verify = bool(configuration.verify_ssl)
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if verify else ssl.CERT_NONE)
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    return context
