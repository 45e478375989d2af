"""The REST v2 bodies of the RunPod adapter, held to RunPod's own document: every create body we
build validates against openapi-v2.json, and the document's own Pod examples read as the port's
PodStatus."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.runpod_openapi import runpod_v2_spec
from pegboard.adapters.runpod.query_values import UnsafeQueryValue
from pegboard.adapters.runpod.rest_bodies import create_pod_body, pod_status
from pegboard.domain.ports.gpu_cloud import POD_EXITED, POD_RUNNING, POD_STARTING, PodRequest

A4000 = "NVIDIA RTX A4000"


def request(**kw: Any) -> PodRequest:
    fields: dict[str, Any] = {
        "name": "run-1",
        "image": "runpod/pytorch:2.4.0",
        "gpu_id": A4000,
        "datacenter_id": "EU-RO-1",
        **kw,
    }
    return PodRequest(**fields)


def document_example(path: str, method: str, status: str) -> dict[str, Any]:
    op = runpod_v2_spec().document["paths"][path][method]
    content = op["responses"][status]["content"]["application/json"]
    value = next(iter(content["examples"].values()))["value"]
    return value["pods"][0] if "pods" in value else value


@pytest.mark.parametrize(
    "changes",
    [
        {"volume_gb": 20},
        {"network_volume_id": "agv6w2qcg7", "volume_mount": "/data"},
        {"cloud_type": "COMMUNITY", "gpu_count": 2, "ports": ("22/tcp", "8888/http")},
        {"cloud_type": "ALL", "env": {"PUBLIC_KEY": "ssh-ed25519 AAAA x", "QUOTE": 'a"b\\n'}},
        {"ports": ()},
    ],
)
def test_every_create_body_is_one_runpod_documents(changes: dict[str, Any]) -> None:
    body = create_pod_body(request(**changes))
    runpod_v2_spec().validate_request("POST", "/v2/pods", body=json.dumps(body).encode())
    assert body["gpu"]["id"] == A4000 and body["dataCenterIds"] == ["EU-RO-1"]
    assert body["startSsh"] is True


def test_text_goes_as_it_is_and_ids_are_checked() -> None:
    body = create_pod_body(request(name='odd "name"\n', env={"V": "x\ny"}))
    assert body["name"] == 'odd "name"\n' and body["env"] == {"V": "x\ny"}
    with pytest.raises(UnsafeQueryValue, match="GPU id"):
        create_pod_body(request(gpu_id='A4000"}'))
    with pytest.raises(UnsafeQueryValue, match="environment variable name"):
        create_pod_body(request(env={"BAD-NAME": "x"}))
    with pytest.raises(UnsafeQueryValue, match="volume_gb"):
        create_pod_body(request(volume_gb=5))  # v2's PersistentMount floor is 10 GB


def test_the_documents_running_pod_is_ready_with_its_direct_ssh() -> None:
    status = pod_status(document_example("/v2/pods", "get", "200"))
    assert status.desired_status == POD_RUNNING and status.ready
    assert (status.access.host, status.access.port, status.access.user) == (
        "195.26.233.3",
        34446,
        "root",
    )  # type: ignore[union-attr]
    assert status.gpu_id == "NVIDIA GeForce RTX 4090" and status.datacenter_id == "US-KS-2"
    assert status.cost_per_hour_usd == 0.44 and status.workspace_root == "/workspace"
    assert status.volume_gb == 20 and status.created_at is not None


def test_the_documents_new_pod_is_starting() -> None:
    status = pod_status(document_example("/v2/pods", "post", "201"))
    assert status.desired_status == POD_STARTING and not status.ready and status.access is None


def test_running_without_a_published_port_is_starting_and_exited_has_no_ssh() -> None:
    raw = document_example("/v2/pods", "get", "200")
    no_port = {**raw, "ssh": {"proxy": None, "direct": None}, "runtime": None}
    assert pod_status(no_port).desired_status == POD_STARTING
    stopped = {**raw, "status": "EXITED", "cost": 0.0}
    assert pod_status(stopped).desired_status == POD_EXITED
    assert pod_status(stopped).access is None and pod_status(stopped).stopped_at is None


def test_a_network_volume_pod_has_no_volume_size_of_its_own() -> None:
    raw = document_example("/v2/pods", "get", "200")
    raw = {**raw, "mounts": {"network": [{"volumeId": "v1", "path": "/data"}]}}
    status = pod_status(raw)
    assert status.workspace_root == "/data" and status.volume_gb is None
