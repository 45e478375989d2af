"""Map socket and paramiko failures to the domain's PortError tree, as one line each.

Unreachable: the host could not be reached at all (refused, no route, DNS, connect timeout).
Transient: the connection broke or the SSH handshake failed (worth a bounded retry).
Unauthorized: the server refused our key, or the key cannot be used (never retried).
"""

from __future__ import annotations

import socket

from pegboard.domain.errors import PortError, Transient, Unauthorized, Unreachable


def describe_target(user: str, host: str, port: int) -> str:
    return f"{user}@{host}:{port}"


def map_connect_error(exc: BaseException, *, target: str, timeout: float) -> PortError:
    """The PortError for a failure while connecting or authenticating to `target`."""
    import paramiko

    if isinstance(exc, PortError):
        return exc
    if isinstance(exc, paramiko.PasswordRequiredException):
        return Unauthorized(
            f"ssh to {target}: the private key is passphrase-protected; load it into the "
            "ssh agent and set ssh.use_agent: true"
        )
    if isinstance(exc, paramiko.AuthenticationException):
        return Unauthorized(f"ssh to {target}: authentication refused ({_reason(exc)})")
    if isinstance(exc, socket.gaierror):
        return Unreachable(f"ssh to {target}: cannot resolve the host name ({_reason(exc)})")
    if isinstance(exc, ConnectionRefusedError):
        return Unreachable(f"ssh to {target}: connection refused (is sshd running?)")
    if isinstance(exc, TimeoutError | socket.timeout):
        return Unreachable(f"ssh to {target}: no answer within {timeout:g}s")
    if isinstance(exc, paramiko.SSHException):
        return Transient(f"ssh to {target}: SSH handshake failed ({_reason(exc)})")
    if isinstance(exc, EOFError | ConnectionError):
        return Transient(f"ssh to {target}: connection closed ({_reason(exc)})")
    if isinstance(exc, OSError):
        return Unreachable(f"ssh to {target}: {exc.strerror or _reason(exc)}")
    return PortError(f"ssh to {target}: {_reason(exc)}")


def connection_lost(target: str, doing: str) -> Transient:
    return Transient(f"ssh to {target}: connection lost while {doing}")


def describe_error(exc: BaseException) -> str:
    """The first line of an exception's text, or its class name."""
    return _reason(exc)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text and text[0] else type(exc).__name__
