"""Time strings as the apiserver (RFC3339, whole seconds) and the kubelet (RFC3339NanoFixed) write
them. Times are integer nanoseconds since the epoch; callers read their own clock."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$"
)
NANOS = 1_000_000_000


def seconds_to_nanos(seconds: float) -> int:
    """Epoch seconds as nanoseconds, rounded to the microsecond a float can hold."""
    return round(seconds * 1_000_000) * 1000


def format_rfc3339(ns: int) -> str:
    """Whole seconds, as creationTimestamp, startedAt and condition times are written."""
    return datetime.fromtimestamp(ns // NANOS, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_last_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def format_rfc3339_nano(ns: int) -> str:
    """The kubelet's log timestamp: always nine fraction digits, so stamps sort as text
    (RFC3339NanoFixed, "2006-01-02T15:04:05.000000000Z07:00": kubernetes
    staging/src/k8s.io/cri-client/pkg/logs/logs.go, timeFormatOut, in UTC).

    The date and clock of the last whole second are kept: the sandbox stamps every CRI record
    of a long line apart (16,384 of 256 MiB of 64 KiB lines), and strftime was most of that."""
    seconds, fraction = divmod(ns, NANOS)
    return f"{format_rfc3339_second(seconds)}.{fraction:09d}Z"


def format_rfc3339_second(seconds: int) -> str:
    """`2006-01-02T15:04:05` of epoch `seconds` (UTC): the part of a log timestamp before its
    fraction, kept for the last second asked (one strftime per second of log, not per record)."""
    global _last_second
    cached, text = _last_second  # one tuple read: threads may format at once
    if cached != seconds:
        text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _last_second = (seconds, text)
    return text


def parse_rfc3339(text: str) -> int:
    """An RFC3339 or RFC3339Nano string as epoch nanoseconds; ValueError when malformed."""
    match = _RFC3339.match(text)
    if not match:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    base = datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC
    )
    offset = 0
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = int(base.timestamp()) - offset
    return seconds * NANOS + int((fraction or "0").ljust(9, "0"))
