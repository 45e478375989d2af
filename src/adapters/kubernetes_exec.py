"""Cluster.exec over the apiserver's websocket exec, with the official client's websocket layer.

`GET .../pods/NAME/exec?command=..&stdout=true&stderr=true[&stdin=true]` upgraded to a
websocket as `kubernetes.stream.ws_client.WSClient` does it (what `kubernetes.stream.stream`
opens for `connect_get_namespaced_pod_exec`: its create_websocket, the same TLS and proxy
options), offering `v5.channel.k8s.io` then `v4.channel.k8s.io`, with the one thing WSClient
cannot be given: a bound on the TCP connect, the TLS handshake and the upgrade's answer. Without
it an apiserver (or a proxy in front of it) that accepts the connection and never answers
would hold the run forever; with it that is one line, a Transient PortError.
Every binary message starts with its channel byte: 0 stdin, 1 stdout, 2 stderr, 3 the error
channel, which carries one metav1.Status when the command ends (`Success`, or `Failure` with
reason `NonZeroExitCode` and a cause `ExitCode` whose message is the code:
staging/src/k8s.io/client-go/tools/remotecommand/v4.go, errorDecoderV4), and in v5 only 255,
"close this channel" (remotecommand/v5.go), which is how stdin ends.

The messages are read here one at a time straight off the socket and handed on (WSClient's own
`update` buffers everything that is ready, and `capture_all` keeps a copy of it all), so output
of any size passes in bounded memory. Stdin is written from its own thread: a command that
writes much before it reads could otherwise block on us while we block on it.

Imported by KubernetesCluster.exec on first use only: `kubernetes.stream` pulls in
websocket-client, yaml and requests, which no other call needs.
"""

from __future__ import annotations

import json
import select
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from pegboard.domain.errors import PortError, Transient
from pegboard.domain.ports.cluster import (
    ContainerNotRunning,
    ExecInput,
    ExecResult,
    ExecTimedOut,
    OutputSink,
)

from .kubernetes_errors import error_for_status, error_for_transport, one_line, status_message

__all__ = ["exec_in_pod"]

STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255
_V5 = "v5.channel.k8s.io"
PROTOCOLS = (_V5, "v4.channel.k8s.io")  # what WSClient offers by default
_STDIN_CHUNK = 64 * 1024
HANDSHAKE_TIMEOUT_SEC = (
    30.0  # connect, TLS and upgrade, each; KubernetesCluster passes its read timeout
)
_POLL_SEC = 1.0  # a socket read waits at most this, so the deadline is checked
# The 400s (or the kubelet's answers relayed) for a container that cannot be exec'd into.
_NOT_RUNNING = (
    "container not found",
    "cannot exec into a container in a completed pod",
    "is not valid for pod",
    "does not have a host assigned",
    "is waiting to start",
    "container not running",
)


def exec_in_pod(
    api: Any,
    *,
    host: str,
    namespace: str,
    pod: str,
    command: list[str],
    container: str | None,
    stdin: ExecInput,
    on_stdout: OutputSink | None,
    on_stderr: OutputSink | None,
    timeout: float | None,
    subprotocols: tuple[str, ...] = PROTOCOLS,
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SEC,
) -> ExecResult:
    """Run `command` in the pod through `api` (kubernetes_rest.RestApi); see Cluster.exec.

    `subprotocols`: what the client offers, in order of preference (the client's own default).
    `handshake_timeout`: how long the connect, the TLS handshake and the upgrade's answer may
    each take (never longer than `timeout`)."""
    from kubernetes.stream.ws_client import get_websocket_url
    from websocket import WebSocketBadStatusException, WebSocketException, WebSocketTimeoutException

    where = f"{namespace}/{pod}" + (f"/{container}" if container else "")
    deadline = None if timeout is None else time.monotonic() + timeout
    query: list[tuple[str, str]] = [("command", arg) for arg in command]
    query += [("stdout", "true"), ("stderr", "true"), ("tty", "false")]
    if stdin is not None:
        query.append(("stdin", "true"))
    if container:
        query.append(("container", container))
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/exec"
    _, url, headers, _, _ = api.param_serialize(
        method="GET",
        resource_path=path,
        query_params=query,
        header_params={},
        auth_settings=["BearerToken"],
    )
    bound = handshake_timeout if timeout is None else min(handshake_timeout, timeout)
    try:
        lowered = {key.lower(): value for key, value in headers.items()}
        lowered["sec-websocket-protocol"] = ",".join(subprotocols)
        sock = _open(api.configuration, get_websocket_url(url), lowered, bound)  # type: ignore[no-untyped-call]
    except WebSocketBadStatusException as exc:
        raise _handshake_error(exc, where) from None
    except (WebSocketTimeoutException, TimeoutError):
        raise Transient(
            f"exec into {where}: no answer from the Kubernetes API at {host} within {bound:g}s "
            "(connect, TLS and websocket upgrade)"
        ) from None
    except (WebSocketException, OSError) as exc:
        raise error_for_transport(exc, host=host) from exc
    # One timeout on the socket, the exec's own, shared by both threads: the stdin feeder's
    # sends wait for as long as the command takes to read (a short one would cut its stdin
    # short, and it would then wait for the rest until the exec timed out); the reader waits
    # for a frame in select, a poll at a time, so it still sees the deadline.
    sock.settimeout(timeout)
    session = _Session(sock, v5=_subprotocol(sock) == _V5, where=where)
    try:
        if stdin is not None:
            session.feed(stdin)
        return session.read(on_stdout, on_stderr, deadline, timeout, host)
    finally:
        session.close()


def _open(configuration: Any, url: str, headers: dict[str, str], timeout: float) -> Any:
    """kubernetes.stream.ws_client.create_websocket (client 29 to 37: the headers it passes on,
    the TLS options it takes from the configuration, its proxy handling), with `timeout` on the
    connect, which create_websocket never passes (websocket-client then blocks without end)."""

    import certifi
    from kubernetes.stream.ws_client import websocket_proxycare
    from websocket import WebSocket

    header = [f"sec-websocket-protocol: {headers['sec-websocket-protocol']}"]
    if "authorization" in headers:
        header.insert(0, f"authorization: {headers['authorization']}")
    ssl_opts: dict[str, Any]
    if url.startswith("wss://") and configuration.verify_ssl:
        ssl_opts = {
            "cert_reqs": ssl.CERT_REQUIRED,
            "ca_certs": configuration.ssl_ca_cert or certifi.where(),
        }
        if configuration.assert_hostname is not None:
            ssl_opts["check_hostname"] = configuration.assert_hostname
    else:
        ssl_opts = {"cert_reqs": ssl.CERT_NONE}
    if configuration.cert_file:
        ssl_opts["certfile"] = configuration.cert_file
    if configuration.key_file:
        ssl_opts["keyfile"] = configuration.key_file
    if getattr(configuration, "tls_server_name", None):
        ssl_opts["server_hostname"] = configuration.tls_server_name
    options: dict[str, Any] = {"header": header}
    if configuration.proxy or configuration.proxy_headers:
        options = websocket_proxycare(options, configuration, url, headers)  # type: ignore[no-untyped-call]
    # websocket-client builds a bare SSLContext(PROTOCOL_TLS_CLIENT) from these options (its
    # _http._wrap_sni_socket), never create_default_context: Python 3.13's VERIFY_X509_STRICT
    # is not set here, so `lenient_tls` (which clears it for urllib3's REST context) has
    # nothing to relax on the exec path.
    sock = WebSocket(sslopt=ssl_opts, skip_utf8_validation=False)
    sock.connect(url, timeout=timeout, **options)  # type: ignore[no-untyped-call]
    return sock


def _subprotocol(sock: Any) -> str | None:
    """The subprotocol the apiserver chose (as WSClient reads it)."""
    chosen = getattr(sock, "subprotocol", None)
    if chosen:
        return str(chosen)
    for key, value in (sock.getheaders() or {}).items():
        if key.lower() == "sec-websocket-protocol":
            return str(value)
    return None


def _handshake_error(exc: Any, where: str) -> PortError:
    status = int(getattr(exc, "status_code", 0) or 0)
    message = status_message(getattr(exc, "resp_body", None), f"HTTP {status} for exec")
    if any(marker in message for marker in _NOT_RUNNING) and status in (400, 404, 500):
        return ContainerNotRunning(f"cannot exec into {where}: {message}", status=status)
    if not status:
        return Transient(f"exec into {where} failed: {one_line(str(exc))}")
    return error_for_status(status, message)


class _Session:
    """One exec connection: stdin fed from a thread, output read here."""

    def __init__(self, sock: Any, *, v5: bool, where: str) -> None:
        self._sock = sock
        self._v5 = v5
        self._where = where
        self._stop = threading.Event()
        self._feeder: threading.Thread | None = None

    def feed(self, stdin: bytes | Iterable[bytes]) -> None:
        def write() -> None:
            from websocket import ABNF

            try:
                for chunk in _chunks(stdin):
                    if self._stop.is_set():
                        return
                    self._sock.send(bytes([STDIN]) + chunk, ABNF.OPCODE_BINARY)
                if self._v5 and not self._stop.is_set():
                    self._sock.send(bytes([CLOSE, STDIN]), ABNF.OPCODE_BINARY)
            except Exception:  # the connection ended (the command may not read it all): the
                return  # reader reports the status or the break

        self._feeder = threading.Thread(target=write, name="exec-stdin", daemon=True)
        self._feeder.start()

    def read(
        self,
        on_stdout: OutputSink | None,
        on_stderr: OutputSink | None,
        deadline: float | None,
        timeout: float | None,
        host: str,
    ) -> ExecResult:
        from websocket import (
            ABNF,
            WebSocketConnectionClosedException,
            WebSocketException,
            WebSocketTimeoutException,
        )

        out: list[bytes] = []
        err: list[bytes] = []
        stdout_sink = on_stdout if on_stdout is not None else out.append
        stderr_sink = on_stderr if on_stderr is not None else err.append
        status = b""
        while True:
            wait = _POLL_SEC
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ExecTimedOut(f"exec in {self._where} timed out after {timeout:g}s")
                wait = min(wait, remaining)
            if not self._readable(wait):
                continue
            try:
                opcode, frame = self._sock.recv_data_frame(True)
            except WebSocketTimeoutException:
                continue  # a frame cut short for the whole timeout: the deadline ends it
            except (WebSocketConnectionClosedException, OSError):
                break  # the end (the status, if any, came before it)
            except WebSocketException as exc:
                if status:
                    break
                raise Transient(f"exec in {self._where} broke: {one_line(str(exc))}") from exc
            if opcode == ABNF.OPCODE_CLOSE:
                break
            if opcode not in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) or not frame.data:
                continue
            data = frame.data if isinstance(frame.data, bytes) else frame.data.encode()
            channel, payload = data[0], data[1:]
            if not payload:
                continue
            if channel == STDOUT:
                stdout_sink(payload)
            elif channel == STDERR:
                stderr_sink(payload)
            elif channel == ERROR:
                status += payload
        if not status:
            raise Transient(
                f"exec in {self._where}: the connection to {host} ended before the command's "
                "exit status arrived"
            )
        return ExecResult(_exit_code(status, self._where), b"".join(out), b"".join(err))

    def _readable(self, wait: float) -> bool:
        """A frame (or its start, or the connection's end) is there to read within `wait`."""
        raw = self._sock.sock
        if raw is None:
            return True  # closed: the read says so
        if isinstance(raw, ssl.SSLSocket) and raw.pending():
            return True  # decrypted bytes already buffered: select would not see them
        try:
            ready, _, _ = select.select([raw], [], [], wait)
        except (OSError, ValueError):  # closed underneath
            return True
        return bool(ready)

    def close(self) -> None:
        self._stop.set()
        try:
            self._sock.close(timeout=1)
        except Exception:  # closing a broken connection may itself fail
            pass
        if self._feeder is not None:
            self._feeder.join(timeout=2)


def _chunks(stdin: bytes | Iterable[bytes]) -> Iterator[bytes]:
    if isinstance(stdin, bytes | bytearray | memoryview):
        view = memoryview(stdin)
        for start in range(0, len(view), _STDIN_CHUNK):
            yield bytes(view[start : start + _STDIN_CHUNK])
        return
    for chunk in stdin:
        if chunk:
            yield bytes(chunk)


def _exit_code(status: bytes, where: str) -> int:
    """The exit code a metav1.Status on the error channel reports (remotecommand/v4.go)."""
    try:
        body = json.loads(status)
    except ValueError:
        text = one_line(status.decode(errors="replace"))
        raise PortError(f"exec in {where} failed: {text}") from None
    if body.get("status") == "Success":
        return 0
    details = body.get("details") or {}
    if body.get("reason") == "NonZeroExitCode":
        for cause in details.get("causes") or ():
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message", ""))
                except ValueError:
                    break
    message = one_line(str(body.get("message") or status.decode(errors="replace")))
    if any(marker in message for marker in _NOT_RUNNING):
        # v5: the apiserver upgrades first, then learns from the kubelet that the container
        # is not running, and says so as a Failure (500 InternalError) on the error channel.
        raise ContainerNotRunning(f"cannot exec into {where}: {message}", status=body.get("code"))
    raise PortError(f"exec in {where} failed: {message}", status=body.get("code"))
