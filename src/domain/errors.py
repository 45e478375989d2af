"""Every error pegboard raises on purpose. Only the CLI layer maps these to exit codes."""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "ConfigError",
    "ConfigProblem",
    "Conflict",
    "Forbidden",
    "Interrupted",
    "Invalid",
    "NoCandidateHelps",
    "NotFound",
    "PegboardError",
    "PortError",
    "RunnerError",
    "Transient",
    "Unauthorized",
    "Unreachable",
    "UsageError",
    "error_kind",
    "port_error_class",
]


class PegboardError(Exception):
    """Base of every error pegboard raises on purpose; its message is one line for the user."""


class UsageError(PegboardError):
    """A bad flag or argument on the command line (exit 2)."""


@attrs.frozen
class ConfigProblem:
    """One problem in one input: a file (with line when known) or a flag, and a key path."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    source: str
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(PegboardError):
    """One or more problems in the configuration, all reported at once (exit 2)."""

    def __init__(self, problems: list[ConfigProblem] | tuple[ConfigProblem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


class RunnerError(PegboardError):
    """The runner itself failed, as opposed to the remote command (squarepeg: exit 125)."""


class Interrupted(PegboardError):
    """The user interrupted the run (SIGINT/SIGTERM)."""


class PortError(PegboardError):
    """An adapter behind a port failed; carries the remote status code when there is one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(PortError):
    """The remote object does not exist (HTTP 404 and the like)."""


class Conflict(PortError):
    """The remote object already exists (HTTP 409)."""


class Unauthorized(PortError):
    """Credentials were missing or rejected (HTTP 401)."""


class Forbidden(PortError):
    """The credentials may not do this (HTTP 403)."""


class Invalid(PortError):
    """The remote side rejected the request as invalid (HTTP 400/422)."""


class NoCandidateHelps(PortError):
    """A create refusal about the account or the API, not the place (no balance, an API that
    no longer exists): no other GPU type or datacenter would be answered differently, so the
    failover walk stops at it instead of asking every candidate the same question."""


class Transient(PortError):
    """A failure worth retrying: 5xx, 429, connection refused or reset, timeouts."""


class Unreachable(Transient):
    """The remote endpoint could not be reached at all (DNS, refused, TLS)."""


_BY_HTTP_STATUS: dict[int, type[PortError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Invalid,
}


def port_error_class(status: int | None) -> type[PortError]:
    """The PortError class an HTTP status means: 4xx by meaning, 429 and 5xx Transient, else
    PortError. The one mapping: adapters raise by it, use cases read a bare PortError by it."""
    if status is None:
        return PortError
    found = _BY_HTTP_STATUS.get(status)
    if found is not None:
        return found
    return Transient if status == 429 or status >= 500 else PortError


def error_kind(error: PortError) -> type[PortError]:
    """What a PortError means: its own class, or for a bare PortError, its status's class."""
    return port_error_class(error.status) if type(error) is PortError else type(error)
