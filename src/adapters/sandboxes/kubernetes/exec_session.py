"""pods/exec over WebSocket: options, subprotocol negotiation and one session's channel mux.

Which server a client reaches decides the protocol, as in a cluster:
- A client offering `v5.channel.k8s.io` (kubectl >= 1.31, the Python client >= 32) is served by
  the apiserver's StreamTranslator (staging/src/k8s.io/apiserver/pkg/util/proxy/
  translatinghandler.go, streamtranslator.go, websocket.go): binary frames, a metav1.Status JSON
  on channel 3, `[255, channel]` half-closes a channel (stdin EOF), and the kubelet's errors
  arrive after the upgrade as an InternalError status.
- Any other offer is proxied to the kubelet's legacy WebSocket server (pkg/kubelet/cri/streaming/
  remotecommand/websocket.go): `channel.k8s.io`, `base64.channel.k8s.io` (text frames, channel
  as an ASCII digit, data base64), `v4.channel.k8s.io` and `v4.base64.channel.k8s.io`; v4 writes
  the Status JSON (httpstream.go v4WriteStatusFunc), earlier ones the error's text only on a
  failure (v1WriteStatusFunc). The kubelet's refusals are HTTP answers before any upgrade.
Channels (staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go): 0 stdin,
1 stdout, 2 stderr, 3 error/status, 4 resize (`{"Width":w,"Height":h}` JSON), 255 close (v5).

One thread does all socket I/O (a TLS socket must not be read and written at once from two
threads), multiplexing the client, the command's output pipes and its exit (a pidfd) with
select, and feeding stdin without ever blocking on it: a command that neither reads its stdin
nor stops writing output cannot stall the session.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import os
import select
import socket
import ssl
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pegboard.adapters.kube_semantics.status import StatusError

from .websocket import (
    CLOSE_NORMAL,
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    FrameParser,
    WebSocketProtocolError,
    close_payload,
    frame,
)

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
V5 = "v5.channel.k8s.io"
_READ_SIZE = 64 << 10
_STDIN_BACKLOG = 4 << 20  # unread stdin bytes buffered before the client is no longer read
_SLICE = 0.5  # how often the loop re-checks the stop flag
# After the status, how long the server waits for the client to close (websocket.go
# finishTimeout: 15 minutes); the sandbox's own stop ends the wait at once.
FINISH_TIMEOUT = 15 * 60.0


@dataclass(frozen=True)
class ChannelProtocol:
    name: str
    binary: bool  # binary frames, channel as a byte; else text frames, ASCII digit + base64
    json_status: bool  # channel 3 carries a metav1.Status JSON (v4, v5); else an error's text
    close_signal: bool  # v5: [255, channel] half-closes a channel
    translated: bool  # served by the apiserver's StreamTranslator (v5) rather than the kubelet


_V5 = ChannelProtocol(V5, binary=True, json_status=True, close_signal=True, translated=True)
# The kubelet's legacy server (remotecommand/websocket.go createWebSocketStreams); "" is a client
# that asked for no subprotocol: binary, as channel.k8s.io.
_LEGACY = {
    "": ChannelProtocol("", True, False, False, False),
    "channel.k8s.io": ChannelProtocol("channel.k8s.io", True, False, False, False),
    "base64.channel.k8s.io": ChannelProtocol("base64.channel.k8s.io", False, False, False, False),
    "v4.channel.k8s.io": ChannelProtocol("v4.channel.k8s.io", True, True, False, False),
    "v4.base64.channel.k8s.io": ChannelProtocol(
        "v4.base64.channel.k8s.io", False, True, False, False
    ),
}
SUPPORTED = (V5, *(name for name in _LEGACY if name))


def negotiate(offered: list[str]) -> ChannelProtocol | None:
    """The protocol the cluster would serve: v5 whenever offered (translatinghandler.go
    IsWebSocketRequestWithStreamCloseProtocol), else the first offer the kubelet knows
    (wsstream conn.go handshake: the client's order); None when nothing fits."""
    if V5 in offered:
        return _V5
    for name in offered or [""]:
        if name in _LEGACY:
            return _LEGACY[name]
    return None


def _parse_bool(key: str, value: str) -> bool:
    """Go's strconv.ParseBool, as the query parameter codec decodes PodExecOptions."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise StatusError(
        400,
        f'{key}: Invalid value: "{value}": strconv.ParseBool: parsing "{value}": invalid syntax',
    )


@dataclass(frozen=True)
class ExecOptions:
    command: list[str]
    container: str | None
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def exec_options(params: dict[str, list[str]]) -> ExecOptions:
    """PodExecOptions from the query: stdout and stderr default to true (pkg/apis/core/v1/
    defaults.go SetDefaults_PodExecOptions); tty drops stderr (kubelet cri/streaming/
    remotecommand/httpstream.go NewOptions); at least one stream and one command word."""

    def flag(key: str, default: bool) -> bool:
        values = params.get(key)
        return _parse_bool(key, values[-1]) if values else default

    command = params.get("command") or []
    options = ExecOptions(
        command=command,
        container=(params.get("container") or [""])[-1] or None,
        stdin=flag("stdin", False),
        stdout=flag("stdout", True),
        stderr=flag("stderr", True),
        tty=flag("tty", False),
    )
    if not command:
        # pkg/registry/core/pod/rest/subresources.go ExecREST.Connect
        raise StatusError(400, "you must specify at least 1 command")
    if options.tty and options.stderr:
        options = ExecOptions(
            command, options.container, options.stdin, options.stdout, False, True
        )
    if not (options.stdin or options.stdout or options.stderr):
        raise StatusError(400, "you must specify at least 1 of stdin, stdout, stderr")
    return options


def exec_container(pod: dict[str, object], wanted: str | None) -> str:
    """The container an exec runs in: the one named, or the pod's only one (pkg/registry/core/
    pod/strategy.go validateContainer; its BadRequest words)."""
    spec = pod["spec"]
    assert isinstance(spec, dict)
    names = [str(c["name"]) for c in spec.get("containers") or ()]
    inits = [str(c["name"]) for c in spec.get("initContainers") or ()]
    ephemeral = [str(c["name"]) for c in spec.get("ephemeralContainers") or ()]
    pod_name = pod["metadata"]["name"]  # type: ignore[index]
    if not wanted:
        if len(names) == 1:
            return names[0]
        if not names:
            raise StatusError(400, f"a container name must be specified for pod {pod_name}")
        message = f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
        if inits:
            message += f" or one of the init containers: [{' '.join(inits)}]"
        raise StatusError(400, message)
    if wanted not in (*names, *inits, *ephemeral):
        raise StatusError(400, f"container {wanted} is not valid for pod {pod_name}")
    return wanted


def exit_status(protocol: ChannelProtocol, command: list[str], code: int) -> dict[str, object]:
    """The status a finished command gets. The kubelet's (exec.go ServeExec) names the runtime's
    error, `error executing command [argv], exit code N` (containerd's CodeExitError); through
    the StreamTranslator (v5) the apiserver's own SPDY client decoded that into `command
    terminated with exit code N` first (client-go errorDecoderV4), which codeExitToStatusError
    wraps again."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    inner = (
        f"command terminated with exit code {code}"
        if protocol.translated
        else f"error executing command [{' '.join(command)}], exit code {code}"
    )
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: {inner}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_error(message: str) -> dict[str, object]:
    """apierrors.NewInternalError as a status on channel 3."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def start_failure_status(
    protocol: ChannelProtocol, options: ExecOptions, exc: OSError
) -> dict[str, object]:
    """The command could not be started: containerd's OCI runtime error, which the kubelet
    reports as an InternalError (exec.go ServeExec); through the StreamTranslator its SPDY
    client returned that status's message as a plain error, wrapped in a second InternalError
    (streamtranslator.go), so kubectl prints the prefix twice."""
    reason = (
        "executable file not found in $PATH"
        if exc.errno == errno.ENOENT
        else (exc.strerror or str(exc)).lower()
    )
    message = (
        "error executing command in container: failed to exec in container: failed to start "
        "exec: OCI runtime exec failed: exec failed: unable to start container process: "
        f'exec: "{options.command[0]}": {reason}: unknown'
    )
    status = internal_error(message)
    return internal_error(str(status["message"])) if protocol.translated else status


def refusal_status(protocol: ChannelProtocol, exc: StatusError) -> dict[str, object]:
    """The kubelet refused (the container is not running): for v5 the translator's SPDY
    upgrade to the kubelet failed after the client's upgrade (client-go spdy roundtripper:
    `unable to upgrade connection: <body>`), reported as an InternalError."""
    return internal_error(f"unable to upgrade connection: {exc.message}")


class _ClientGone(Exception):
    """The client closed the connection (or broke the protocol): the session ends."""


class ExecSession:
    """One upgraded connection: the command's streams to and from the channels, then its status.

    `start` launches the command with the given stdio (PIPE/DEVNULL, or a pty's slave fd for
    all three); it raises OSError when the command cannot start, StatusError for a refusal."""

    def __init__(
        self,
        sock: socket.socket,
        protocol: ChannelProtocol,
        options: ExecOptions,
        *,
        stopping: threading.Event,
    ) -> None:
        self._sock = sock
        self._protocol = protocol
        self._options = options
        self._stopping = stopping
        self._parser = FrameParser()
        self._close_sent = False
        self._client_closed = False
        self._stdin_buffer = bytearray()
        self._stdin_eof = False
        self._stdin_fd: int | None = None
        self._outputs: dict[int, int] = {}  # fd -> channel
        # The Popen's pipe objects own their descriptors: closed through them, never by number
        # (a number closed twice may by then be another connection's socket).
        self._files: dict[int, Any] = {}
        self._pty_master: int | None = None
        self._resize_buffer = b""

    # -- frames out ----------------------------------------------------------------------------

    def _send(self, opcode: int, payload: bytes) -> None:
        try:
            self._sock.sendall(frame(opcode, payload))
        except (OSError, ssl.SSLError) as exc:
            raise _ClientGone from exc

    def send_channel(self, channel: int, data: bytes) -> None:
        if self._protocol.binary:
            self._send(OP_BINARY, bytes((channel,)) + data)
        else:
            self._send(OP_TEXT, str(channel).encode() + base64.b64encode(data))

    def _send_close(self, code: int = CLOSE_NORMAL) -> None:
        if not self._close_sent:
            self._close_sent = True
            with contextlib.suppress(_ClientGone):
                self._send(OP_CLOSE, close_payload(code))

    def write_status(self, status: dict[str, object]) -> None:
        if self._protocol.json_status:
            self.send_channel(ERROR, json.dumps(status, separators=(",", ":")).encode())
        elif status.get("status") != "Success":  # v1WriteStatusFunc: only an error, as text
            self.send_channel(ERROR, str(status.get("message", "")).encode())

    # -- the session ---------------------------------------------------------------------------

    def run(self, start: Callable[..., subprocess.Popen[bytes]]) -> None:
        """Announce the streams, run the command, report how it ended, close."""
        options = self._options
        try:
            # "Send an empty message to the lowest writable channel to notify the client the
            # connection is established" (both websocket.go files).
            first = STDOUT if options.stdout else STDERR if options.stderr else ERROR
            self.send_channel(first, b"")
            try:
                process = self._start(start)
            except StatusError as exc:
                self.write_status(refusal_status(self._protocol, exc))
                self._finish()
                return
            except OSError as exc:
                self.write_status(start_failure_status(self._protocol, options, exc))
                self._finish()
                return
            try:
                code = self._pump(process)
            finally:
                self._close_pipes()
            if code is None:  # the client went away first: the command is left to run on
                return
            self.write_status(exit_status(self._protocol, options.command, code))
            self._finish()
        except _ClientGone:
            self._close_pipes()

    def _start(self, start: Callable[..., subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        options = self._options
        if options.tty:
            master, slave = os.openpty()
            try:
                process = start(stdin=slave, stdout=slave, stderr=slave, tty=True)
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            self._pty_master = master
            if options.stdin:
                self._stdin_fd = master
            if options.stdout:
                self._outputs[master] = STDOUT
            return process
        pipe, devnull = subprocess.PIPE, subprocess.DEVNULL
        process = start(
            stdin=pipe if options.stdin else devnull,
            stdout=pipe if options.stdout else devnull,
            stderr=pipe if options.stderr else devnull,
            tty=False,
        )
        if process.stdin is not None:
            self._stdin_fd = process.stdin.fileno()
            self._files[self._stdin_fd] = process.stdin
            os.set_blocking(self._stdin_fd, False)
        for stream, channel in ((process.stdout, STDOUT), (process.stderr, STDERR)):
            if stream is not None:
                self._outputs[stream.fileno()] = channel
                self._files[stream.fileno()] = stream
        return process

    def _close_fd(self, fd: int) -> None:
        if fd == self._pty_master:
            return
        owner = self._files.pop(fd, None)
        with contextlib.suppress(OSError):
            if owner is not None:
                owner.close()

    def _pump(self, process: subprocess.Popen[bytes]) -> int | None:
        """Move bytes until the command has exited and its output pipes are drained; its exit
        code, or None when the client left first."""
        sock = self._sock
        exit_fd = _pidfd(process.pid)
        code: int | None = None
        try:
            while not self._stopping.is_set():
                if code is None and (exit_fd is None or not self._outputs):
                    code = _poll_exit(process)
                if code is not None and not self._outputs:
                    return code
                readable: list[int | socket.socket] = list(self._outputs)
                if not self._client_closed and len(self._stdin_buffer) < _STDIN_BACKLOG:
                    readable.append(sock)
                if exit_fd is not None and code is None:
                    readable.append(exit_fd)
                writable = (
                    [self._stdin_fd] if self._stdin_fd is not None and self._stdin_buffer else []
                )
                pending = isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
                timeout = (
                    0.0
                    if pending
                    else (_SLICE if exit_fd is not None or code is not None else 0.05)
                )
                ready, can_write, _ = select.select(readable, writable, [], timeout)
                if pending and sock not in ready:
                    ready.append(sock)
                if sock in ready:
                    self._receive()
                if can_write:
                    self._feed_stdin()
                for fd in [fd for fd in ready if isinstance(fd, int) and fd in self._outputs]:
                    self._forward(fd)
                if exit_fd is not None and exit_fd in ready:
                    code = _poll_exit(process)
            return None
        finally:
            if exit_fd is not None:
                os.close(exit_fd)

    def _forward(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except OSError as exc:
            if exc.errno != errno.EIO:  # a pty's master reads EIO once the slave side closed
                raise
            data = b""
        if data:
            self.send_channel(self._outputs[fd], data)
            return
        self._outputs.pop(fd)
        self._close_fd(fd)

    def _receive(self) -> None:
        try:
            data = self._sock.recv(_READ_SIZE)
        except ssl.SSLWantReadError:
            return
        except (OSError, ssl.SSLError) as exc:
            raise _ClientGone from exc
        if not data:
            self._client_closed = True
            raise _ClientGone
        try:
            messages = self._parser.feed(data)
        except WebSocketProtocolError as exc:
            self._send_close(exc.code)
            raise _ClientGone from exc
        for opcode, payload in messages:
            if opcode == OP_PING:
                self._send(OP_PONG, payload)
            elif opcode == OP_CLOSE:
                self._client_closed = True
                self._send_close()
                raise _ClientGone
            elif opcode in (OP_BINARY, OP_TEXT) and payload:
                self._on_message(payload)

    def _on_message(self, payload: bytes) -> None:
        if self._protocol.binary:
            channel, data = payload[0], payload[1:]
        else:
            channel, data = payload[0] - ord("0"), base64.b64decode(payload[1:] + b"==")
        if channel == CLOSE and self._protocol.close_signal:
            if data[:1] == bytes((STDIN,)):
                self._stdin_eof = True
                self._maybe_close_stdin()
            return
        if channel == STDIN and self._options.stdin and not self._stdin_eof:
            self._stdin_buffer += data
            self._feed_stdin()
        elif channel == RESIZE and self._options.tty:
            self._resize(data)

    def _feed_stdin(self) -> None:
        fd = self._stdin_fd
        if fd is None:
            self._stdin_buffer.clear()
            return
        while self._stdin_buffer:
            try:
                written = os.write(fd, self._stdin_buffer[:_READ_SIZE])
            except BlockingIOError:
                return
            except OSError:  # the command closed its stdin (EPIPE) or exited: the rest is dropped
                self._stdin_buffer.clear()
                self._close_stdin()
                return
            del self._stdin_buffer[:written]
        self._maybe_close_stdin()

    def _maybe_close_stdin(self) -> None:
        if self._stdin_eof and not self._stdin_buffer:
            if self._pty_master is not None and self._stdin_fd is not None:
                with contextlib.suppress(OSError):  # a terminal's EOF is ^D at a line start
                    os.write(self._stdin_fd, b"\x04")
                self._stdin_fd = None
                return
            self._close_stdin()

    def _close_stdin(self) -> None:
        fd, self._stdin_fd = self._stdin_fd, None
        if fd is not None:
            self._close_fd(fd)

    def _resize(self, data: bytes) -> None:
        """TerminalSize JSON objects, possibly several in one message (websocket.go
        handleResizeEvents decodes a stream of them)."""
        self._resize_buffer += data
        decoder = json.JSONDecoder()
        text = self._resize_buffer.decode(errors="replace")
        position = 0
        while True:
            while position < len(text) and text[position].isspace():
                position += 1
            try:
                size, position = decoder.raw_decode(text, position)
            except ValueError:
                break
            if isinstance(size, dict) and self._pty_master is not None:
                width, height = int(size.get("Width") or 0), int(size.get("Height") or 0)
                with contextlib.suppress(OSError):
                    fcntl.ioctl(
                        self._pty_master,
                        termios.TIOCSWINSZ,
                        struct.pack("HHHH", height, width, 0, 0),
                    )
        self._resize_buffer = text[position:].encode()

    def _close_pipes(self) -> None:
        self._close_stdin()
        for fd in list(self._outputs):
            self._close_fd(fd)
        self._outputs.clear()
        if self._pty_master is not None:
            with contextlib.suppress(OSError):
                os.close(self._pty_master)
            self._pty_master = None

    def _finish(self) -> None:
        """websocket.go finish: the status is written, then the close frame, then the server
        waits for the client to close, so output still in flight is not cut off by a reset."""
        self._send_close()
        deadline = time.monotonic() + FINISH_TIMEOUT
        sock = self._sock
        while not self._client_closed and not self._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            pending = isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
            if not pending and not select.select([sock], [], [], min(_SLICE, remaining))[0]:
                continue
            try:
                self._receive()
            except _ClientGone:
                return


def _pidfd(pid: int) -> int | None:
    """A descriptor readable once the process exits (Linux >= 5.3), so select sees the exit."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _poll_exit(process: subprocess.Popen[bytes]) -> int | None:
    code = process.poll()
    if code is None:
        return None
    return code if code >= 0 else 128 - code  # killed by signal N: 128+N, as runc reports
