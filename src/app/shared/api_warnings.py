"""Warnings the Kubernetes API sends with an answer (`Warning: 299 - "..."` headers): a Pod
Security `warn` level, a deprecated field, an unknown field. kubectl prints each one on stderr
once per process (client-go's WarningWriter with Deduplicate); so does squarepeg, through
whatever `route_to` set (a run's status lines), else as a plain stderr line.

A composition root hands `report` to the Kubernetes adapter, which calls it per warning text.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

_lock = threading.Lock()
_seen: set[str] = set()
_sink: Callable[[str], None] | None = None


def route_to(sink: Callable[[str], None] | None) -> None:
    """From now on (a new command), send the warnings to `sink` (None: plain `Warning: ...`
    lines on stderr), each text once again."""
    global _sink
    with _lock:
        _seen.clear()
        _sink = sink


def report(text: str) -> None:
    """Show one API warning, unless this process showed the same text already."""
    with _lock:
        if text in _seen:
            return
        _seen.add(text)
        sink = _sink
    if sink is not None:
        sink(f"the Kubernetes API warns: {text}")
        return
    try:
        sys.stderr.write(f"Warning: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed stderr never fails a call
        pass


def reset() -> None:
    """Plain stderr lines again, nothing remembered (tests running commands in one process)."""
    route_to(None)
