"""What every loopback sandbox shares: `with sandbox:` starts and stops it, an HTTP server
served from a daemon thread that stop() ends without blocking for long, and serving in the
foreground until SIGINT/SIGTERM (`squarepeg sandbox`, `runpod-deploy sandbox`)."""

from __future__ import annotations

import logging
import signal
import socketserver
import ssl
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Self

logger = logging.getLogger(__name__)


class Sandbox:
    """A loopback server a test or `make demo` starts, uses and stops (a mixin).

    `with Sandbox() as s:` is `s = Sandbox().start()` ... `s.close()`; close() is stop() unless
    the sandbox has more to remove (LoopbackSshd also removes its work directory).
    """

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class HangupsAreNormal:
    """handle_error of a socketserver server (a mixin, before the server class): socketserver
    prints a traceback to stderr for every request that raises, but a client hanging up
    mid-response (a keep-alive closed, a stream dropped, a timed-out call) is normal for an API
    server; anything else is logged, never printed from a handler thread."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError | ssl.SSLError):
            return
        logger.exception("%s: error while serving %s", type(self).__name__, client_address)


class MethodDispatch:
    """do_GET ... do_DELETE of a BaseHTTPRequestHandler, all handed to `_dispatch(method)`."""

    def _dispatch(self, method: str) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")


def serve_in_thread(server: socketserver.BaseServer, *, name: str) -> threading.Thread:
    """Serve `server` from a started daemon thread (polling for shutdown every 50 ms)."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name=name
    )
    thread.start()
    return thread


def stop_serving(server: socketserver.BaseServer | None, thread: threading.Thread | None) -> None:
    """Stop a server serve_in_thread started (or one that never got a thread) and close it."""
    if server is not None:
        if thread is not None:  # shutdown() waits for a serve_forever that must be running
            server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=2)


def serve_until_signalled(sandbox: Sandbox, announce: Callable[[], None]) -> None:
    """Start `sandbox`, `announce()` it, and serve until SIGINT or SIGTERM; then stop it (also
    when start or announce fails) and put the previous signal handlers back."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        sandbox.start()
        announce()
        while not stop.wait(0.5):
            pass
    finally:
        sandbox.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
