"""Reading why a pod cannot be placed: the scheduler's FailedScheduling wording."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.kubernetes.scheduling import (
    Hindrance,
    hindrances,
    scheduled,
    scheduling_verdict,
)

# kube-scheduler 1.31's FitError text (pkg/scheduler/framework/types.go) for each filter.
GPU_SHORT = (
    "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for "
    "incoming pod, 2 Preemption is not helpful for scheduling."
)
TAINTED = "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}."
OLD_TAINT = (
    "0/1 nodes are available: 1 node(s) had taint {dedicated: gpu}, that the pod didn't tolerate."
)
NO_CLAIM = '0/2 nodes are available: persistentvolumeclaim "data" not found.'
UNBOUND = "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def pending(message: str | None, *, uid: str = "u1") -> dict[str, Any]:
    conditions = []
    if message is not None:
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            }
        )
    return {
        "metadata": {"uid": uid},
        "spec": {},
        "status": {"phase": "Pending", "conditions": conditions},
    }


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (GPU_SHORT, {Hindrance.INSUFFICIENT, Hindrance.SELECTOR}),
        (TAINTED, {Hindrance.TAINT}),
        (OLD_TAINT, {Hindrance.TAINT, Hindrance.OTHER}),
        (NO_CLAIM, {Hindrance.VOLUME}),
        (UNBOUND, {Hindrance.VOLUME}),
        ("no nodes available to schedule pods", {Hindrance.NO_NODES}),
    ],
)
def test_each_filter_message_is_named(message: str, expected: set[Hindrance]) -> None:
    assert hindrances(message) == expected


def test_the_preemption_part_names_nothing() -> None:
    assert Hindrance.OTHER not in hindrances(GPU_SHORT)


def test_unschedulable_condition_is_a_verdict_another_type_may_fix() -> None:
    verdict = scheduling_verdict(pending(GPU_SHORT))
    assert verdict.unschedulable and verdict.another_type_may_help
    assert verdict.message == GPU_SHORT


def test_a_missing_claim_is_the_same_for_every_gpu_type() -> None:
    verdict = scheduling_verdict(pending(NO_CLAIM))
    assert verdict.unschedulable and not verdict.another_type_may_help


def test_events_alone_are_enough_and_other_pods_events_are_ignored() -> None:
    pod = pending(None, uid="mine")
    theirs = {"reason": "FailedScheduling", "message": TAINTED, "involvedObject": {"uid": "old"}}
    assert not scheduling_verdict(pod, [theirs]).unschedulable
    mine = {"reason": "FailedScheduling", "message": TAINTED, "involvedObject": {"uid": "mine"}}
    verdict = scheduling_verdict(pod, [theirs, mine])
    assert verdict.unschedulable and verdict.reasons == {Hindrance.TAINT}


def test_a_bound_pod_is_never_unschedulable_whatever_old_events_say() -> None:
    pod = pending(GPU_SHORT)
    pod["spec"]["nodeName"] = "gpu-1"
    assert scheduled(pod)
    event = {"reason": "FailedScheduling", "message": GPU_SHORT, "involvedObject": {"uid": "u1"}}
    assert not scheduling_verdict(pod, [event]).unschedulable


def test_a_pod_not_yet_looked_at_is_not_unschedulable() -> None:
    assert not scheduling_verdict(pending(None)).unschedulable
