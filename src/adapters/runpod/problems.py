"""RunPod REST v2 error answers as the domain's PortError tree: by HTTP status, never by text.

v2 errors are RFC 9457 problem details (`application/problem+json`, schema ErrorResponse in
api-reference-v2/openapi.json: `title`, `status`, `detail`, optional `errors`). RunPod's
problems carry no `type` member, which RFC 9457 §4.2.1 reads as "about:blank": the status code
is the whole classification. `detail` (and `errors` for a 422) is shown to the user, never
matched. A problem with a `type` other than about:blank is named in the message so a user can
report it, but it does not change the class either: we know no RunPod problem types.
"""

from __future__ import annotations

from typing import Any

from pegboard.domain.errors import (
    Invalid,
    NoCandidateHelps,
    NotFound,
    PortError,
    Unauthorized,
    port_error_class,
)

from .credentials import REJECTED_KEY


class InsufficientBalance(Invalid, NoCandidateHelps):
    """HTTP 402: the account cannot pay for this; no other GPU or datacenter will do better."""


def problem_text(problem: dict[str, Any] | None, status: int) -> str:
    """One line from a problem: its detail (or title), its validation errors, its type."""
    if not problem:
        return f"HTTP {status}"
    detail = problem.get("detail") or problem.get("title") or f"HTTP {status}"
    text = " ".join(str(detail).split())
    errors = problem.get("errors")
    if isinstance(errors, list) and errors:
        text += " (" + "; ".join(" ".join(str(e).split()) for e in errors[:5]) + ")"
    kind = problem.get("type")
    if isinstance(kind, str) and kind and kind != "about:blank":
        text += f" [{kind}]"
    return text


def error_for_status(status: int, problem: dict[str, Any] | None, what: str) -> PortError:
    """The PortError for an answer with this status (4xx/5xx) while doing `what`: the domain's
    one status mapping (port_error_class), plus 402 (no money) and 410 (gone, as 404)."""
    text = f"{what}: {problem_text(problem, status)} (HTTP {status})"
    if status == 401:
        return Unauthorized(REJECTED_KEY, status=401)
    if status == 402:
        return InsufficientBalance(text, status=402)
    if status == 410:
        return NotFound(text, status=410)
    return port_error_class(status)(text, status=status)
