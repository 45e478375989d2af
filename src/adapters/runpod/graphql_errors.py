"""GraphQL errors as the domain's PortError tree (graphql_legacy.py only; REST v2 errors are
classified by HTTP status in problems.py).

RunPod's GraphQL answers most failures with HTTP 200 and `errors: [{message}]`: the message is
all there is to go by, so its wording is matched. This goes when GraphQL is retired.
"""

from __future__ import annotations

import re

from pegboard.domain.errors import Invalid, NotFound, PortError, Transient
from pegboard.domain.ports.gpu_cloud import NoCapacity

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
