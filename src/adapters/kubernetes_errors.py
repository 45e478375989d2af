"""Kubernetes API failures as PortErrors: HTTP statuses by class, transport errors by kind.

Only the Status `message` (or 256 characters of a non-Status body) travels on, so a response
that echoes a manifest or a token never ends up in a terminal or a log.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pegboard.domain.errors import PortError, Transient, Unreachable, port_error_class


class Gone(Transient):
    """410: the resourceVersion is too old to watch from; list again."""


def status_message(body: bytes | str | None, fallback: str) -> str:
    """The Status message of an error body, else a short, single-line excerpt of it."""
    if not body:
        return fallback
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status" and data.get("message"):
        return one_line(str(data["message"]))
    return one_line(text[:256]) or fallback


def one_line(text: str) -> str:
    return " ".join(text.split())


def error_for_status(status: int, message: str) -> PortError:
    """The PortError for an HTTP status (domain.errors.port_error_class; 410 is Gone here)."""
    if status == 410:
        return Gone(message, status=status)
    return port_error_class(status)(message, status=status)


# urllib3's wording around the reason that matters: `HTTPSConnection(host='h', port=1): ` (2.x)
# or `<HTTPSConnection object at 0x..>: ` (1.x), then `Failed to establish a new connection: `,
# then `[Errno 111] Connection refused`. Only the last part means anything to a user.
_URLLIB3_PREAMBLE = re.compile(r"^(<[^>]*>|\w*Connection(Pool)?\([^)]*\)): ")
_URLLIB3_WRAPPER = "Failed to establish a new connection: "
_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\] ")


def transport_reason(exc: BaseException) -> str:
    """A one-line reason a user can act on (`Connection refused`), without urllib3's internals."""
    reason = getattr(exc, "reason", None)  # MaxRetryError wraps the real cause
    if isinstance(reason, BaseException):
        exc = reason
    text = one_line(str(exc))
    text = _URLLIB3_PREAMBLE.sub("", text)
    text = text.removeprefix(_URLLIB3_WRAPPER)
    text = _ERRNO_PREFIX.sub("", text)
    return text or type(exc).__name__


def error_for_transport(exc: BaseException, *, host: str) -> PortError:
    """Unreachable for refused/DNS/TLS/connect timeouts, Transient for breaks and read timeouts."""
    import urllib3.exceptions as u3

    cause = exc.reason if isinstance(exc, u3.MaxRetryError) and exc.reason else exc
    reason = transport_reason(cause)
    if isinstance(cause, u3.ReadTimeoutError | TimeoutError):
        return Transient(f"timed out waiting for the Kubernetes API at {host}: {reason}")
    unreachable = (
        u3.NewConnectionError,
        u3.ConnectTimeoutError,
        u3.SSLError,
        u3.NameResolutionError,
        ConnectionRefusedError,
    )
    if isinstance(cause, unreachable):
        return Unreachable(f"cannot reach the Kubernetes API at {host}: {reason}")
    return Transient(f"connection to the Kubernetes API at {host} failed: {reason}")
