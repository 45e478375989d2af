"""Which container's log a request reads, and why the kubelet refuses one (the 400s it answers)."""

from __future__ import annotations

from typing import Any

from .kubetime import format_rfc3339_nano, parse_rfc3339
from .status import StatusError

JsonObject = dict[str, Any]
_PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff")


def log_container(pod: JsonObject, requested: str | None) -> str:
    """The container named by the request, or the only one; 400 when unknown or ambiguous."""
    spec, name = pod["spec"], pod["metadata"]["name"]
    app: list[str] = [c["name"] for c in spec["containers"]]
    init: list[str] = [c["name"] for c in spec.get("initContainers") or ()]
    if not requested:
        if len(app) != 1:
            choices = f"choose one of: [{' '.join(app)}]"
            if init:
                choices += f" or one of the init containers: [{' '.join(init)}]"
            raise StatusError(400, f"a container name must be specified for pod {name}, {choices}")
        return app[0]
    if requested not in app + init:
        raise StatusError(400, f"container {requested} is not valid for pod {name}")
    return requested


def has_started(pod: JsonObject, container: str) -> bool:
    """Whether the container has a log yet (it ran or runs)."""
    state = _state(pod, container)
    return "running" in state or "terminated" in state


def _state(pod: JsonObject, container: str) -> JsonObject:
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (
        status.get("initContainerStatuses") or []
    ):
        if entry["name"] == container:
            return dict(entry.get("state") or {})
    return {}


def not_started(pod: JsonObject, container: str) -> StatusError:
    """The 400 for a container that has no log yet, worded by its waiting reason."""
    name = pod["metadata"]["name"]
    reason = (_state(pod, container).get("waiting") or {}).get("reason") or "ContainerCreating"
    if reason in _PULL_FAILURES:
        reason = "trying and failing to pull image"
    return StatusError(
        400, f'container "{container}" in pod "{name}" is waiting to start: {reason}'
    )


def parse_since_time(text: str) -> int:
    """The sinceTime query parameter as epoch nanoseconds; 400 when it is not RFC3339."""
    try:
        return parse_rfc3339(text)
    except ValueError as exc:
        raise StatusError(400, f"sinceTime: {exc}") from None


def runtime_line_ends(complete_lines: bytes) -> bytes:
    """Complete output lines as containerd stores them: a `\\r` right before a newline is dropped
    with it (internal/cri/io/logger.go, readLine: `drop = 2` when the byte before the `\\n` is a
    `\\r`), so `kubectl logs` shows CRLF output with plain newlines. Any other `\\r` (a progress
    bar's), and one ending output that has no newline yet, stay."""
    # A lone byte is a memchr (~0.02 ns a byte), a two-byte pattern a scan of every byte (~1.3):
    # most output has no `\r` at all, and a 256 MiB log paid a third of a second for nothing.
    if b"\r" not in complete_lines:
        return complete_lines
    return complete_lines.replace(b"\r\n", b"\n")


def pending_content(pending: bytes) -> int:
    """How many bytes of a line without its newline yet count toward containerd's record size: a
    final `\\r` may still become part of a CRLF, which is dropped (readLine unreads a `\\r` at a
    full buffer's end and waits for the byte after it)."""
    return len(pending) - 1 if pending.endswith(b"\r") else len(pending)


def timestamp_prefix(ns: int) -> bytes:
    """What `timestamps=true` puts before each log record."""
    return format_rfc3339_nano(ns).encode() + b" "
