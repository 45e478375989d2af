"""API failures as the apiserver reports them: a `kind: Status` body with code, reason, details."""

from __future__ import annotations

from typing import Any

from .resources import Resource

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

Cause = dict[str, str]


class StatusError(Exception):
    """A failure the apiserver answers with a Status object (the sandbox sends `body()`; the fake
    turns it into the PortError the real adapter would raise)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "InternalError")
        self.details = details

    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.message, reason=self.reason, details=self.details)


def status_body(
    code: int, message: str, *, reason: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def success_body(details: dict[str, Any]) -> dict[str, Any]:
    """What a DELETE answers when it does not return the object (e.g. a Job, in background)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _details(resource: Resource, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if resource.group:
        details["group"] = resource.group
    return {**details, "kind": resource.plural, **extra}


def not_found(resource: Resource, name: str) -> StatusError:
    return StatusError(
        404, f'{resource.qualified_plural} "{name}" not found', details=_details(resource, name)
    )


def already_exists(resource: Resource, name: str) -> StatusError:
    return StatusError(
        409,
        f'{resource.qualified_plural} "{name}" already exists',
        details=_details(resource, name),
    )


def unknown_resource(what: str) -> StatusError:
    return StatusError(404, f"the server could not find the requested resource ({what})")


def invalid(kind: str, name: str, causes: list[Cause], *, group: str = "") -> StatusError:
    """422 Invalid, worded like the apiserver's NewInvalid: one cause bare, several in [..]."""
    messages = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in causes))
    joined = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details.update(kind=kind, causes=causes)
    return StatusError(422, f'{qualified} "{name}" is invalid: {joined}', details=details)
