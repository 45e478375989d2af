"""Kubernetes time strings as numbers, and ages in kubectl's two-unit style (pure, stdlib only).

RFC3339 is parsed into integer nanoseconds since the epoch, so comparisons are exact and never
depend on how many fraction digits a writer kept (`…00.5Z` vs `…00.50001Z`).
"""

from __future__ import annotations

import datetime as dt
import re

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})"
)
NANOS = 1_000_000_000


def parse_rfc3339_nanos(text: str) -> int:
    """An RFC3339 / RFC3339Nano time as epoch nanoseconds; ValueError when malformed."""
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an RFC3339 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    offset = 0
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    stamp = dt.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=dt.UTC
    )
    whole = int(stamp.timestamp()) - offset
    return whole * NANOS + int((fraction or "0").ljust(9, "0"))


def parse_rfc3339_seconds(text: str | None) -> float | None:
    """Epoch seconds of an RFC3339 time, or None when absent or malformed."""
    if not text:
        return None
    try:
        return parse_rfc3339_nanos(text) / NANOS
    except ValueError:
        return None


def format_age(seconds: float) -> str:
    """kubectl-style age with at most two units: `45s`, `10m12s`, `3h14m`, `2d5h`."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
