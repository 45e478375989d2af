"""A runpod-deploy GPU pod as Kubernetes objects and back (pure rules of kubernetes_pod.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.adapters.providers.kubernetes.pod_objects import (
    REQUEST_ANNOTATION,
    GpuPodSettings,
    claim_manifest,
    claim_status,
    gpu_label_value,
    kubernetes_pod_id,
    pod_manifest,
    pod_status,
    request_of,
    start_failure,
)
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    POD_TERMINATED,
    PodRequest,
)

REQUEST = PodRequest(
    name="Sweep_A-20261202T003000.123456Z-ab12",
    image="img:1",
    gpu_id="NVIDIA L4",
    datacenter_id="cluster",
    volume_gb=5,
    env={"PUBLIC": "yes"},
)


@pytest.mark.parametrize(
    ("run", "pod_id"),
    [
        ("Sweep_A-20261202T003000.123456Z-ab12", "sweep-a-20261202t003000-123456z-ab12"),
        ("---", "pod"),
        ("x" * 80 + "-20261202T003000Z", ("x" * 80 + "-20261202t003000z")[-63:]),
    ],
)
def test_a_run_name_becomes_a_dns_label(run: str, pod_id: str) -> None:
    assert kubernetes_pod_id(run) == pod_id
    assert len(kubernetes_pod_id(run)) <= 63


def test_gpu_names_become_label_values() -> None:
    assert gpu_label_value(" NVIDIA GeForce RTX 4090 ") == "NVIDIA-GeForce-RTX-4090"


def test_the_request_round_trips_through_the_annotation() -> None:
    manifest = pod_manifest(REQUEST, pod_id="p", settings=GpuPodSettings())
    back = request_of(manifest)
    assert back is not None
    assert back.name == REQUEST.name and back.gpu_id == "NVIDIA L4" and back.volume_gb == 5
    assert back.env == {}  # env is never recorded: it is asked again at resume
    assert manifest["spec"]["containers"][0]["env"] == [{"name": "PUBLIC", "value": "yes"}]
    claim = claim_manifest(REQUEST, pod_id="p", settings=GpuPodSettings())
    assert request_of(claim) == back


@pytest.mark.parametrize("raw", [None, "", "not json", "[1]", '{"image": "x"}'])
def test_a_bad_annotation_reads_as_no_request(raw: str | None) -> None:
    obj: dict[str, Any] = {"metadata": {"annotations": {REQUEST_ANNOTATION: raw}}}
    assert request_of(obj) is None


def _pod(phase: str, state: dict[str, Any] | None, **meta: Any) -> dict[str, Any]:
    manifest = pod_manifest(REQUEST, pod_id="p", settings=GpuPodSettings())
    manifest["metadata"].update(meta)
    statuses = [{"name": "job", "state": state}] if state is not None else []
    manifest["status"] = {"phase": phase, "containerStatuses": statuses}
    return manifest


def test_a_pod_reads_as_starting_running_exited_or_going() -> None:
    assert pod_status(_pod("Pending", None)).desired_status == POD_STARTING
    running = pod_status(_pod("Running", {"running": {}}), price_per_gpu_hour=0.5)
    assert running.desired_status == POD_RUNNING and running.cost_per_hour_usd == 0.5
    assert running.name == REQUEST.name and running.workspace_root == "/workspace"
    assert pod_status(_pod("Failed", {"terminated": {}})).desired_status == POD_EXITED
    stopping = _pod("Running", {"running": {}}, deletionTimestamp="2026-12-02T00:00:00Z")
    assert pod_status(stopping).desired_status == POD_EXITED  # its claim stays
    on_empty_dir = pod_manifest(
        PodRequest(name="n", image="i", gpu_id="g", datacenter_id="c"),
        pod_id="q",
        settings=GpuPodSettings(),
    )
    on_empty_dir["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    assert pod_status(on_empty_dir).desired_status == POD_TERMINATED


def test_a_container_that_can_never_start_says_why() -> None:
    pod = _pod("Pending", {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}})
    assert start_failure(pod) == "container 'job' failed to start (ImagePullBackOff): no such image"
    assert start_failure(_pod("Pending", {"waiting": {"reason": "ContainerCreating"}})) is None


def test_a_stopped_pod_is_its_claim() -> None:
    claim = claim_manifest(REQUEST, pod_id="p", settings=GpuPodSettings())
    claim["metadata"]["annotations"]["pegboard.io/stopped-at"] = "2026-12-02T00:00:10Z"
    status = claim_status(claim)
    assert status.desired_status == POD_EXITED and status.stopped_at == 1796169610.0
    assert status.volume_gb == 5 and status.cost_per_hour_usd == 0.0
