"""The exit code of a finished run, read from the pod status by container name (pure).

The codes themselves are exit_codes.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.pod_start import container_status
from pegboard.domain.squarepeg.exit_codes import MAX_EXIT_CODE, OOM_KILLED, RUNNER_FAILED

# Terminated reasons that mean the process never ran (containerd/CRI-O; Docker's dockershim).
START_FAILURES = ("StartError", "ContainerCannotRun")


@attrs.frozen
class ExitOutcome:
    """What squarepeg exits with, whether the container really terminated, and a note for stderr."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    code: int
    terminated: bool
    note: str | None = None


def terminated_state(pod: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    """`state.terminated` of the named container, or None while it has not terminated."""
    status = container_status(pod, container)
    if status is None:
        return None
    terminated = (status.get("state") or {}).get("terminated")
    return terminated if isinstance(terminated, Mapping) else None


def exit_outcome(pod: Mapping[str, Any], container: str) -> ExitOutcome:
    """Container code verbatim; OOMKilled -> 137 with a note; never terminated -> 125."""
    terminated = terminated_state(pod, container)
    if terminated is None:
        return ExitOutcome(RUNNER_FAILED, terminated=False, note=_never_terminated(pod, container))
    raw = terminated.get("exitCode")
    code = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if terminated.get("reason") == "OOMKilled":
        shown = "" if code is None else f" (exit code {code})"
        return ExitOutcome(OOM_KILLED, terminated=True, note=f"container was OOMKilled{shown}")
    if terminated.get("reason") in START_FAILURES:
        # The runtime could not start the process (a missing executable, a bad workdir): its
        # code (128) stands, but the reason is only in the status, never in the log.
        start_code = code if code is not None else RUNNER_FAILED
        if not 0 <= start_code <= MAX_EXIT_CODE:  # one byte, never wrapped (256 would be 0)
            start_code = MAX_EXIT_CODE
        detail = str(terminated.get("message") or "").strip()
        note = (
            f"container {container!r} could not start ({terminated['reason']}, exit {start_code})"
        )
        return ExitOutcome(
            start_code, terminated=True, note=f"{note}: {detail}" if detail else note
        )
    if code is None:
        return ExitOutcome(
            RUNNER_FAILED,
            terminated=True,
            note=f"container {container!r} terminated without an exit code",
        )
    if 0 <= code <= MAX_EXIT_CODE:
        return ExitOutcome(code, terminated=True)
    # A process exit status is one byte: wrapping (256 -> 0) could turn a failure into success.
    return ExitOutcome(
        MAX_EXIT_CODE,
        terminated=True,
        note=f"container exited with code {code}, outside 0-255; exiting {MAX_EXIT_CODE}",
    )


def _never_terminated(pod: Mapping[str, Any], container: str) -> str:
    status = pod.get("status") or {}
    for init in status.get("initContainerStatuses") or []:
        init_end = (init.get("state") or {}).get("terminated") or {}
        if init_end.get("exitCode") not in (None, 0):
            return (
                f"init container {init.get('name')!r} failed with exit code "
                f"{init_end['exitCode']}; container {container!r} never ran"
            )
    phase = status.get("phase") or "Unknown"
    reason = status.get("reason")
    message = status.get("message")
    detail = (
        f"pod {phase}" + (f" ({reason})" if reason else "") + (f": {message}" if message else "")
    )
    return f"container {container!r} never terminated; {detail}"
