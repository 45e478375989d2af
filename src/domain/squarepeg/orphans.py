"""Orphan sweep policy: which of my squarepeg Pods and Jobs were left behind, and why (pure).

Two categories (the seed's): *finished* (a terminal phase or Job condition, older than the
minimum age since it finished) and *stuck* (Pending on a fail-fast reason, older than the
minimum age since creation). Jobs are judged by their conditions, or by a stuck child when they
have none yet; Job-owned pods are never deleted directly. Kept resources, other users', the
current run's and those whose runner is still alive (its heartbeat annotation has not run out,
see runner_heartbeat.py) are never touched.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.pod_start import TERMINAL_PHASES, stuck_container
from pegboard.domain.kubernetes.timestamps import format_age, parse_rfc3339_seconds
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.runner_heartbeat import held_by_live_runner

JOB_NAME_LABEL = "job-name"
JOB_NAME_LABEL_NEW = "batch.kubernetes.io/job-name"


class OrphanCategory(enum.Enum):
    FINISHED = "finished"
    STUCK = "stuck"


@attrs.frozen
class SweepDecision:
    """Delete this resource: it is an orphan of `category`, `age_seconds` old."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    kind: ResourceKind
    name: str
    category: OrphanCategory
    age_seconds: float
    detail: str  # `finished 10m12s ago`, `ImagePullBackOff for 3h14m`

    @property
    def ref(self) -> str:
        return f"{self.kind.value.lower()}/{self.name}"


def sweep_selector(created_by: str) -> str:
    """The server-side label selector: mine, managed by squarepeg, not kept."""
    return (
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_VALUE},"
        f"{labels.CREATED_BY}={created_by},!{labels.KEEP}"
    )


# Server-side filters of the sweep's LISTs, so the apiserver returns only what may be an orphan.
# Job-owned pods are left out by their label (Kubernetes sets `job-name` on every Job's pod; an
# ownerReference is not selectable); Running pods by their phase (a selectable pod field).
NOT_RUNNING = "status.phase!=Running"
PENDING = "status.phase=Pending"


def bare_pod_sweep_selector(created_by: str) -> str:
    """Mine, not kept, not owned by a Job (the pods the sweep may delete itself)."""
    return f"{sweep_selector(created_by)},!{JOB_NAME_LABEL}"


def job_pods_selector(created_by: str, job_names: Iterable[str]) -> str:
    """The pods of these Jobs of mine (a Job without a final condition is judged by them)."""
    names = ",".join(sorted(set(job_names)))
    return (
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_VALUE},"
        f"{labels.CREATED_BY}={created_by},{JOB_NAME_LABEL} in ({names})"
    )


def undecided_jobs(
    jobs: Iterable[Mapping[str, Any]], *, now: float, exclude_run_id: str | None
) -> list[str]:
    """Names of the Jobs the sweep may judge by a stuck pod: no Complete/Failed condition yet,
    not this run's, not held by a live runner."""
    names = []
    for job in jobs:
        own = (job.get("metadata") or {}).get("labels") or {}
        if _job_has_final_condition(job) or held_by_live_runner(job, now=now):
            continue
        if exclude_run_id is not None and own.get(labels.RUN_ID) == exclude_run_id:
            continue
        names.append(str((job.get("metadata") or {}).get("name", "")))
    return names


def plan_sweep(
    *,
    pods: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
    created_by: str,
    now: float,
    min_age_seconds: float,
    exclude_run_id: str | None = None,
) -> tuple[SweepDecision, ...]:
    """The orphans to delete, Jobs first, then bare pods, each by name."""

    def eligible(obj: Mapping[str, Any]) -> bool:
        own = (obj.get("metadata") or {}).get("labels") or {}
        return (
            own.get(labels.MANAGED_BY) == labels.MANAGED_BY_VALUE
            and own.get(labels.CREATED_BY) == created_by
            and labels.KEEP not in own
            and (exclude_run_id is None or own.get(labels.RUN_ID) != exclude_run_id)
            # A live runner may still be reading it (a finished pod's log goes with the pod).
            and not held_by_live_runner(obj, now=now)
        )

    decisions: list[SweepDecision] = []
    stuck_children: dict[str, SweepDecision] = {}
    bare_pods: list[Mapping[str, Any]] = []
    for pod in pods:
        owner_job = _owning_job(pod)
        if owner_job is None:
            bare_pods.append(pod)
            continue
        # A Job's pod is judged for its Job (even when the pod itself lacks our labels).
        child = _pod_decision(pod, now=now, min_age_seconds=min_age_seconds)
        if child is not None and child.category is OrphanCategory.STUCK:
            stuck_children.setdefault(owner_job, child)

    for job in jobs:
        if not eligible(job):
            continue
        name = str((job.get("metadata") or {}).get("name", ""))
        decision = _job_decision(job, name=name, now=now, min_age_seconds=min_age_seconds)
        if decision is None and not _job_has_final_condition(job) and name in stuck_children:
            child = stuck_children[name]
            decision = attrs.evolve(child, kind=ResourceKind.JOB, name=name)
        if decision is not None:
            decisions.append(decision)

    for pod in bare_pods:
        if not eligible(pod):
            continue
        decision = _pod_decision(pod, now=now, min_age_seconds=min_age_seconds)
        if decision is not None:
            decisions.append(decision)
    return tuple(decisions)


def _owning_job(pod: Mapping[str, Any]) -> str | None:
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("name"):
            return str(ref["name"])
    own = meta.get("labels") or {}
    name = own.get(JOB_NAME_LABEL) or own.get(JOB_NAME_LABEL_NEW)
    return str(name) if name else None


def _created(obj: Mapping[str, Any]) -> float | None:
    return parse_rfc3339_seconds((obj.get("metadata") or {}).get("creationTimestamp"))


def _pod_decision(
    pod: Mapping[str, Any], *, now: float, min_age_seconds: float
) -> SweepDecision | None:
    name = str((pod.get("metadata") or {}).get("name", ""))
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase in TERMINAL_PHASES:
        finished = _latest_finish(status) or _created(pod)
        if finished is None:
            return None
        age = now - finished
        if age < min_age_seconds:
            return None
        return SweepDecision(
            ResourceKind.POD,
            name,
            OrphanCategory.FINISHED,
            age,
            f"{str(phase).lower()} {format_age(age)} ago",
        )
    if phase == "Pending":
        stuck = stuck_container(pod)
        created = _created(pod)
        if stuck is None or created is None:
            return None  # merely slow (pulling, scheduling, a PVC): never swept
        age = now - created
        if age < min_age_seconds:
            return None
        return SweepDecision(
            ResourceKind.POD,
            name,
            OrphanCategory.STUCK,
            age,
            f"{stuck.reason} for {format_age(age)}",
        )
    return None  # Running, Unknown: never


def _latest_finish(status: Mapping[str, Any]) -> float | None:
    times = [
        parse_rfc3339_seconds(
            ((entry.get("state") or {}).get("terminated") or {}).get("finishedAt")
        )
        for key in ("containerStatuses", "initContainerStatuses")
        for entry in status.get(key) or []
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _final_conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        condition
        for condition in (job.get("status") or {}).get("conditions") or []
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True"
    ]


def _job_has_final_condition(job: Mapping[str, Any]) -> bool:
    return bool(_final_conditions(job))


def _job_decision(
    job: Mapping[str, Any], *, name: str, now: float, min_age_seconds: float
) -> SweepDecision | None:
    conditions = _final_conditions(job)
    if not conditions:
        return None
    condition = conditions[0]
    finished = (
        parse_rfc3339_seconds(condition.get("lastTransitionTime"))
        or parse_rfc3339_seconds((job.get("status") or {}).get("completionTime"))
        or _created(job)
    )
    if finished is None:
        return None
    age = now - finished
    if age < min_age_seconds:
        return None
    word = "complete" if condition.get("type") == "Complete" else "failed"
    return SweepDecision(
        ResourceKind.JOB, name, OrphanCategory.FINISHED, age, f"{word} {format_age(age)} ago"
    )
