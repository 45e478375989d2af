"""Why a pod cannot be placed on a node, read from its PodScheduled condition and its events (pure).

The scheduler writes the same text to both: the condition `PodScheduled=False`, reason
`Unschedulable`, and a Warning event `FailedScheduling`, e.g.

    0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node
    affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for
    scheduling.

(kube-scheduler's framework: `NewStatus(Unschedulable, ...)` per filter plugin, joined by
`FitError.Error()` in pkg/scheduler/framework/types.go; the plugin messages come from
noderesources/fit.go "Insufficient %v", nodeaffinity "node(s) didn't match Pod's node
affinity/selector", tainttoleration "node(s) had untolerated taint {%s: %s}", volumebinding
"pod has unbound immediate PersistentVolumeClaims" and `persistentvolumeclaim "%s" not found`.)

A GPU type's failover needs to know whether another node selector could help: a shortage of the
GPU resource, a selector no node matches and an untolerated taint are about this GPU type; a
missing or unbound claim is the same for every type.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "FAILED_SCHEDULING",
    "Hindrance",
    "SchedulingVerdict",
    "hindrances",
    "scheduled",
    "scheduling_verdict",
    "unschedulable_message",
]

FAILED_SCHEDULING = "FailedScheduling"
_PREEMPTION = ". preemption:"


class Hindrance(enum.Enum):
    """One reason the scheduler gave for not placing the pod."""

    INSUFFICIENT = "insufficient"  # "Insufficient <resource>": no node has that much free
    SELECTOR = "selector"  # "didn't match Pod's node affinity/selector"
    TAINT = "taint"  # "had untolerated taint"
    VOLUME = "volume"  # a claim missing, unbound or bound elsewhere
    NO_NODES = "no-nodes"  # "no nodes available to schedule pods"
    OTHER = "other"


def _hindrance(part: str) -> Hindrance:
    text = part.strip().lower()
    if "insufficient " in text:
        return Hindrance.INSUFFICIENT
    if "node affinity/selector" in text or "didn't match pod's node affinity" in text:
        return Hindrance.SELECTOR
    if "untolerated taint" in text or "had taint" in text:
        return Hindrance.TAINT
    if "persistentvolumeclaim" in text or "volume node affinity" in text:
        return Hindrance.VOLUME
    if "no nodes available" in text:
        return Hindrance.NO_NODES
    return Hindrance.OTHER


def hindrances(message: str) -> frozenset[Hindrance]:
    """The reasons a FailedScheduling message names (its preemption part left out)."""
    head = message.split(_PREEMPTION, 1)[0]
    _, colon, listing = head.partition(" are available:")
    parts = listing.split(",") if colon else [head]
    return frozenset(_hindrance(part) for part in parts if part.strip())


def unschedulable_message(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's message when the pod's PodScheduled condition says Unschedulable."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return str(condition.get("message") or "Unschedulable")
    return None


def scheduled(pod: Mapping[str, Any]) -> bool:
    """The pod has a node (spec.nodeName, PodScheduled=True, or a phase past Pending)."""
    if (pod.get("spec") or {}).get("nodeName"):
        return True
    if (pod.get("status") or {}).get("phase") not in (None, "Pending"):
        return True  # only a kubelet moves a pod on, and only a bound pod has one
    return any(
        condition.get("type") == "PodScheduled" and condition.get("status") == "True"
        for condition in (pod.get("status") or {}).get("conditions") or []
    )


def failed_scheduling_messages(
    events: Iterable[Mapping[str, Any]], *, pod_uid: str | None
) -> list[str]:
    """The FailedScheduling messages about this pod (by uid when known), oldest first."""
    found: list[str] = []
    for event in events:
        if event.get("reason") != FAILED_SCHEDULING:
            continue
        involved = event.get("involvedObject") or {}
        if pod_uid and involved.get("uid") and involved.get("uid") != pod_uid:
            continue
        message = str(event.get("message") or "")
        if message and message not in found:
            found.append(message)
    return found


@attrs.frozen
class SchedulingVerdict:
    """Whether the pod is stuck unplaced, why, and whether another GPU type could help."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    unschedulable: bool
    message: str = ""
    reasons: frozenset[Hindrance] = frozenset()

    @property
    def another_type_may_help(self) -> bool:
        """False when the cause is the same for every node selector (a missing claim)."""
        return self.unschedulable and Hindrance.VOLUME not in self.reasons


def scheduling_verdict(
    pod: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()
) -> SchedulingVerdict:
    """The pod's placement as the scheduler reported it: unschedulable (and why) or not (yet)."""
    if scheduled(pod):
        return SchedulingVerdict(unschedulable=False)
    uid = (pod.get("metadata") or {}).get("uid")
    message = unschedulable_message(pod)
    messages = failed_scheduling_messages(events, pod_uid=uid)
    if message is None and not messages:
        return SchedulingVerdict(unschedulable=False)
    text = message or messages[-1]
    reasons = hindrances(text)
    return SchedulingVerdict(unschedulable=True, message=text, reasons=reasons)
