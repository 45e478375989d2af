"""Pod-start rules both cores share (pure): when a pod has started, when it can never start, which
events to surface. squarepeg's runs and runpod-deploy's Kubernetes provider read pods with these."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.timestamps import parse_rfc3339_seconds

# Waiting reasons that never clear on their own with restartPolicy Never (the seed's list).
FAIL_FAST_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def container_status(pod: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    """The status of the app container `container`, matched by name (never by position)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for status in statuses:
        if status.get("name") == container:
            return status  # type: ignore[no-any-return]
    return None


class Startup(enum.Enum):
    WAITING = "waiting"
    STARTED = "started"  # running, or already terminated: startup is over
    FAILED = "failed"  # a fail-fast reason: it will never start


@attrs.frozen
class StuckContainer:
    """A container (app or init) waiting on a fail-fast reason."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    container: str
    init: bool
    reason: str
    message: str

    def describe(self) -> str:
        which = "init container" if self.init else "container"
        text = f"{which} {self.container!r} failed to start ({self.reason})"
        return f"{text}: {self.message}" if self.message else text


def stuck_container(pod: Mapping[str, Any]) -> StuckContainer | None:
    """The first init or app container waiting on a fail-fast reason, if any."""
    status = pod.get("status") or {}
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for entry in status.get(key) or []:
            waiting = (entry.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason in FAIL_FAST_REASONS:
                return StuckContainer(
                    container=str(entry.get("name", "")),
                    init=init,
                    reason=str(reason),
                    message=str(waiting.get("message") or ""),
                )
    return None


def startup_state(pod: Mapping[str, Any], container: str) -> Startup:
    """Started once our container runs or ended (or the pod ended); failed on a fail-fast reason."""
    status = pod.get("status") or {}
    if status.get("phase") in TERMINAL_PHASES:
        return Startup.STARTED
    own = container_status(pod, container)
    state = (own or {}).get("state") or {}
    if "running" in state or "terminated" in state:
        return Startup.STARTED
    if stuck_container(pod) is not None:
        return Startup.FAILED
    if own is None and status.get("phase") == "Running":
        return Startup.STARTED  # no status for our container at all: nothing better to wait for
    return Startup.WAITING


def looks_blocked(pod: Mapping[str, Any]) -> bool:
    """Pending for a reason worth asking the events about (unschedulable, a waiting reason)."""
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "Pending"):
        return False
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return True
    for key in ("initContainerStatuses", "containerStatuses"):
        for entry in status.get(key) or []:
            reason = ((entry.get("state") or {}).get("waiting") or {}).get("reason")
            if reason and reason not in ("ContainerCreating", "PodInitializing"):
                return True
    return False


@attrs.frozen
class EventNotice:
    """One event line to show: its type, reason and message."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    type: str
    reason: str
    message: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.reason, self.message)


def refused_pod_create(notice: EventNotice) -> bool:
    """A job controller's FailedCreate that never clears on its own: the apiserver refused the
    Job's pod (Pod Security, a LimitRange bound, a quota the pod does not state, RBAC), and
    the controller only retries the same pod. An exceeded quota may clear as other pods end,
    so that one is waited out (within --timeout), like a pod waiting for a node."""
    return (
        notice.type == "Warning"
        and notice.reason == "FailedCreate"
        and "is forbidden" in notice.message
        and "exceeded quota" not in notice.message
    )


def events_to_surface(
    events: Iterable[Mapping[str, Any]],
    *,
    involved_name: str,
    involved_uid: str | None,
    already_shown: frozenset[tuple[str, str]],
    warnings_only: bool = True,
) -> tuple[EventNotice, ...]:
    """Events about exactly this object (name AND uid) not shown yet, oldest first, each once."""
    chosen: list[tuple[float, EventNotice]] = []
    seen = set(already_shown)
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("name") != involved_name:
            continue
        if involved_uid and involved.get("uid") and involved.get("uid") != involved_uid:
            continue  # an earlier object that had the same name
        kind = str(event.get("type") or "Normal")
        if warnings_only and kind != "Warning":
            continue
        notice = EventNotice(
            type=kind,
            reason=str(event.get("reason") or ""),
            message=str(event.get("message") or ""),
        )
        if notice.key in seen:
            continue
        seen.add(notice.key)
        when = parse_rfc3339_seconds(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or event.get("firstTimestamp")
            or (event.get("metadata") or {}).get("creationTimestamp")
        )
        chosen.append((when or 0.0, notice))
    chosen.sort(key=lambda item: item[0])  # stable: same-second events keep list order
    return tuple(notice for _, notice in chosen)
