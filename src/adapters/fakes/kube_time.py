"""Kubernetes time strings: RFC3339 (objects) and RFC3339Nano (log timestamps), stdlib only."""

from __future__ import annotations

import datetime as dt
import re

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$"
)


def to_nanos(seconds: float) -> int:
    """Epoch seconds as integer nanoseconds, rounded to the microsecond a float can hold."""
    return round(seconds * 1_000_000) * 1000


def format_time(seconds: float) -> str:
    """RFC3339 with whole seconds, as the apiserver writes creationTimestamp and friends."""
    stamp = dt.datetime.fromtimestamp(int(seconds), tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_nanos(nanos: int) -> str:
    """The kubelet's log timestamp (RFC3339NanoFixed): always nine fraction digits."""
    whole, fraction = divmod(nanos, 1_000_000_000)
    base = dt.datetime.fromtimestamp(whole, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{fraction:09d}Z"


def parse_nanos(text: str) -> int:
    """An RFC3339 / RFC3339Nano string as epoch nanoseconds; ValueError when malformed."""
    match = _RFC3339.match(text.strip())
    if not match:
        raise ValueError(f"not an RFC3339 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    offset = dt.timedelta(0)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    stamp = dt.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=dt.UTC
    )
    whole = int((stamp - offset).timestamp())
    return whole * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))
