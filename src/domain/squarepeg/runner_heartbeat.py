"""The runner's heartbeat on its own Pod or Job: the sweep's way to tell that a runner is alive.

A finished pod may still be read by the squarepeg process that created it (a slow consumer of a
big log); a real cluster removes the log with the pod, so the sweep (of any other runner, or
`squarepeg clean`) must not delete it while that process lives. The runner therefore stamps its
resource with the annotation `squarepeg.io/runner-alive-until: <RFC3339>` in the create request
itself (no gap, no extra request for a short run) and renews it every RENEW_EVERY_SECONDS with a
merge PATCH, each time promising HOLD_SECONDS more. The sweep
skips a resource whose promise has not run out yet:

- a live runner, however slow its reader, keeps renewing, so its resource is never swept;
- a runner that ends while its resource stays (`--keep`, a failed delete) removes the promise
  as its last request, so `squarepeg clean --include-kept` can remove it at once;
- a runner killed with SIGKILL stops renewing, so its resource becomes an ordinary orphan
  HOLD_SECONDS later at most (then the usual minimum age applies).

The mark lives on the resource itself, so it needs no object of its own (nothing more to leak
or to sweep) and no request of the sweep: the sweep reads it from the LIST it already makes.
Times are the writer's clock compared with the reader's, as the minimum age already does; a
clock skew smaller than HOLD_SECONDS - RENEW_EVERY_SECONDS is absorbed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pegboard.domain.kubernetes.labels import RUNNER_ALIVE_UNTIL
from pegboard.domain.kubernetes.timestamps import parse_rfc3339_seconds

HOLD_SECONDS = 90.0  # how long one renewal promises: three missed renewals before it runs out
RENEW_EVERY_SECONDS = 30.0


def alive_until_value(now: float, hold_seconds: float = HOLD_SECONDS) -> str:
    """The annotation's value: now + hold, RFC3339 in UTC with whole seconds (rounded up)."""
    until = dt.datetime.fromtimestamp(int(-(-(now + hold_seconds) // 1)), tz=dt.UTC)
    return until.strftime("%Y-%m-%dT%H:%M:%SZ")


def with_runner_hold(
    manifest: Mapping[str, Any], now: float, hold_seconds: float = HOLD_SECONDS
) -> dict[str, Any]:
    """A copy of a Pod or Job manifest that carries the runner's first promise."""
    metadata = dict(manifest.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    annotations[RUNNER_ALIVE_UNTIL] = alive_until_value(now, hold_seconds)
    metadata["annotations"] = annotations
    return {**manifest, "metadata": metadata}


def heartbeat_patch(now: float, hold_seconds: float = HOLD_SECONDS) -> dict[str, Any]:
    """A JSON merge patch that renews the runner's promise on its Pod or Job."""
    return {"metadata": {"annotations": {RUNNER_ALIVE_UNTIL: alive_until_value(now, hold_seconds)}}}


def release_patch() -> dict[str, Any]:
    """A JSON merge patch that removes the promise (RFC 7386: a null member is deleted): what a
    runner sends once it will read its resource no more (kept, or its delete failed)."""
    return {"metadata": {"annotations": {RUNNER_ALIVE_UNTIL: None}}}


def runner_alive_until(obj: Mapping[str, Any]) -> float | None:
    """Until when the resource's runner promised to be alive (epoch seconds), or None."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(RUNNER_ALIVE_UNTIL)
    return parse_rfc3339_seconds(value) if isinstance(value, str) else None


def held_by_live_runner(obj: Mapping[str, Any], *, now: float) -> bool:
    """Whether the runner that created `obj` still promises to be alive at `now`."""
    until = runner_alive_until(obj)
    return until is not None and now < until
