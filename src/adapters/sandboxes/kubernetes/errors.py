"""API errors rendered as `kind: Status` bodies, the way the apiserver reports failures."""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An HTTP error the server answers with a Status object."""

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

    def status(self) -> dict[str, Any]:
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


def not_found(kind_plural: str, name: str, group: str = "") -> ApiError:
    resource = f"{kind_plural}.{group}" if group else kind_plural
    return ApiError(
        404,
        f'{resource} "{name}" not found',
        details={"name": name, "group": group, "kind": kind_plural}
        if group
        else {"name": name, "kind": kind_plural},
    )


def already_exists(kind_plural: str, name: str, group: str = "") -> ApiError:
    resource = f"{kind_plural}.{group}" if group else kind_plural
    details = {"name": name, "kind": kind_plural}
    if group:
        details["group"] = group
    return ApiError(409, f'{resource} "{name}" already exists', details=details)
