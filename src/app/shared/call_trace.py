"""`-v/--verbose`: one stderr line per outside call (an API request, an SSH command) with its
duration, e.g. `squarepeg: GET /api/v1/namespaces/default/pods -> 200 in 12 ms`.

The CLI switches it on for the process (`enable`); a composition root hands `observer()` to the
adapters that make the calls (the Kubernetes adapter, the SSH shell), which call it once per call
with what they did, how long it took and how it ended. Off, `observer()` is None and the adapters
pay nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

# (what was called, seconds it took, how it ended: a status code, "exit 0", an error's name)
CallObserver = Callable[[str, float, str], None]

_observer: CallObserver | None = None


def enable(prog: str) -> None:
    """From now on, every observed call prints one line on (the current) stderr."""
    global _observer

    def report(what: str, seconds: float, outcome: str) -> None:
        line = f"{prog}: {what} -> {outcome} in {seconds * 1000:.0f} ms\n"
        try:
            stream = sys.stderr
            stream.write(line)
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed stderr never fails a call
            pass

    _observer = report


def disable() -> None:
    global _observer
    _observer = None


def observer() -> CallObserver | None:
    """What adapters should call per outside call, or None when -v was not given."""
    return _observer


def restore(previous: CallObserver | None) -> None:
    """Put back what `observer()` returned before an in-process CLI run (pegboard.testing)."""
    global _observer
    _observer = previous
