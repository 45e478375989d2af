"""RunPod failures as the domain's PortError tree.

What the SDK raises: AuthenticationError (401 or no key), QueryError(<first GraphQL message>),
`requests` exceptions (connection, timeout), ValueError when the body is not JSON (a gateway
5xx page), KeyError/TypeError when the answer has an unexpected shape.
"""

from __future__ import annotations

import re

from pegboard.domain.errors import (
    Invalid,
    NotFound,
    PortError,
    Transient,
    Unauthorized,
    Unreachable,
)
from pegboard.domain.ports.gpu_cloud import NoCapacity

from .credentials import REJECTED_KEY
from .sdk import RunPodSdk

# RunPod's own wording for "no machine for this now" (create and resume).
_NO_CAPACITY = re.compile(
    r"no longer any instances available|not enough free gpus|no instances? (are )?available"
    r"|does not have the resources|could not find any pods with required specifications"
    r"|out of stock",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(r"not found|does not exist|no pod with", re.IGNORECASE)
_RETRYABLE = re.compile(
    r"something went wrong|internal server error|try again later|timed? ?out|rate limit"
    r"|too many requests|service unavailable|bad gateway",
    re.IGNORECASE,
)
_UNREACHABLE = re.compile(
    r"connection refused|newconnectionerror|name or service not known|failed to resolve"
    r"|nodename nor servname|no route to host|connecttimeout",
    re.IGNORECASE,
)


def port_error(exc: BaseException, what: str, sdk: RunPodSdk, base_url: str) -> PortError:
    """The PortError for `exc` raised while doing `what` (one line, names the operation)."""
    if isinstance(exc, PortError):
        return exc
    if isinstance(exc, sdk.AuthenticationError):
        return Unauthorized(REJECTED_KEY, status=401)
    if isinstance(exc, sdk.QueryError):
        return query_error(str(exc) or "GraphQL error", what)
    import requests

    if isinstance(exc, ValueError):  # requests' JSONDecodeError: an HTML 5xx page
        return Transient(f"{what}: the RunPod API answered with a non-JSON body (gateway error)")
    if isinstance(exc, requests.exceptions.ConnectTimeout) or (
        isinstance(exc, requests.exceptions.ConnectionError) and _UNREACHABLE.search(str(exc))
    ):
        return Unreachable(f"{what}: cannot reach the RunPod API at {base_url}")
    if isinstance(exc, requests.exceptions.Timeout):
        return Transient(f"{what}: the RunPod API did not answer in time")
    if isinstance(exc, requests.exceptions.RequestException):
        return Transient(f"{what}: connection to the RunPod API failed ({type(exc).__name__})")
    if isinstance(exc, (KeyError, TypeError, IndexError)):
        return Transient(f"{what}: unexpected answer from the RunPod API ({exc!r})")
    return PortError(f"{what}: {type(exc).__name__}: {exc}")


def query_error(message: str, what: str) -> PortError:
    """Classify a GraphQL error message (RunPod answers most failures with HTTP 200 + errors)."""
    line = " ".join(message.split())
    text = f"{what}: {line}"
    if _NO_CAPACITY.search(line):
        return NoCapacity(text)
    if _NOT_FOUND.search(line):
        return NotFound(text, status=404)
    if _RETRYABLE.search(line):
        return Transient(text)
    return Invalid(text, status=400)
