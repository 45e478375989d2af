"""Timestamps in the formats the apiserver and the kubelet write."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$"
)


def now_ns() -> int:
    return time.time_ns()


def rfc3339(ns: int) -> str:
    """Seconds precision, as object timestamps (creationTimestamp, startedAt) are written."""
    return datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_nano_fixed(ns: int) -> str:
    """The kubelet's log timestamp: always nine fractional digits, so it sorts lexically."""
    seconds, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def parse_rfc3339(text: str) -> int:
    """Nanoseconds since the epoch; raises ValueError on anything but RFC 3339."""
    match = _RFC3339.match(text)
    if not match:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second, frac, zone = match.groups()
    base = datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC
    )
    offset = 0
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = int(base.timestamp()) - offset
    return seconds * 1_000_000_000 + int((frac or "0").ljust(9, "0"))
