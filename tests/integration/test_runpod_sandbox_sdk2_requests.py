"""What the `runpod` SDK 2.x sends, replayed against the RunPod sandbox: every request must be
one RunPod's v2 document allows, and the sandbox must accept it. The bodies were recorded from
runpod 2.0.0rc2 (runpod/api/ctl_commands.py: get_gpus, get_gpu, create_pod for a GPU pod with
a persistent volume, with a network volume, a CPU pod, stop_pod, resume_pod, terminate_pod,
update_user_settings) driving the sandbox on 2026-12-01; the repository's two-SDK test runs the
SDK itself. `{pod}` is the id the preceding create answered."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from helpers.runpod_openapi import runpod_v2_spec, validate_received_requests
from pegboard.adapters.sandboxes.runpod import RunPodSandbox

RTX3090 = "NVIDIA GeForce RTX 3090"
SDK2_REQUESTS: list[tuple[str, str, object]] = [
    ("GET", "/v2/catalog/gpus", None),
    ("GET", "/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%203090?include=AVAILABILITY&product=POD&count=2", None),
    ("POST", "/v2/pods", {"name": "sdk2", "startSsh": True, "image": "runpod/base:0.6", "cloud": "SECURE",
                          "dataCenterIds": ["EU-RO-1"], "disk": 10, "ports": ["22/tcp", "8888/http"],
                          "env": {"A": "b"}, "mounts": {"persistent": {"size": 20, "path": "/runpod-volume"}},
                          "gpu": {"id": RTX3090, "count": 1, "allowedCudaVersions": ["12.8"]}}),
    ("GET", "/v2/pods/{pod}", None),
    ("GET", "/v2/pods", None),
    ("POST", "/v2/pods/{pod}/action", {"action": "stop"}),
    ("POST", "/v2/pods/{pod}/action", {"action": "start"}),
    ("DELETE", "/v2/pods/{pod}", None),
    ("POST", "/v2/pods", {"name": "nv", "startSsh": True, "image": "img", "disk": 30,
                          "mounts": {"network": [{"volumeId": "nv-pidws100", "path": "/workspace"}]},
                          "gpu": {"id": RTX3090, "count": 1}}),
    ("DELETE", "/v2/pods/{pod}", None),
    ("POST", "/v2/pods", {"name": "cpu", "startSsh": True, "image": "img", "disk": 10,
                          "cpu": {"id": "cpu3c", "vcpuCount": 2}}),
    ("DELETE", "/v2/pods/{pod}", None),
    ("PUT", "/v2/account/ssh-keys", {"keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIsdk2 me"]}),
]  # fmt: skip


@pytest.fixture
def sandbox() -> Iterator[RunPodSandbox]:
    with RunPodSandbox() as server:
        yield server


def test_every_request_sdk2_sends_is_documented_and_accepted(sandbox: RunPodSandbox) -> None:
    pod = ""
    for method, path, body in SDK2_REQUESTS:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            sandbox.url + path.replace("{pod}", pod), data=data, method=method
        )
        request.add_header("Authorization", f"Bearer {sandbox.api_key}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, headers, content = answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{method} {path}: {exc.code} {exc.read()!r}")
        runpod_v2_spec().validate_response(
            method, path.replace("{pod}", pod or "x"), status, headers, content
        )
        if method == "POST" and path == "/v2/pods":
            assert status == 201
            pod = json.loads(content)["id"]
    assert validate_received_requests(sandbox.received_v2) == len(SDK2_REQUESTS)
    assert sandbox.public_keys == ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIsdk2 me"]


def test_what_sdk2_sends_for_min_memory_is_refused_as_the_document_says() -> None:
    """create_pod(min_memory_in_gb=16) adds gpu.minRamPerGpu, which CreateGpuConfig lacks
    (unevaluatedProperties: false): RunPod answers 422, and so does the sandbox."""
    body = {"name": "x", "startSsh": True, "image": "img", "disk": 10,
            "gpu": {"id": RTX3090, "count": 1, "minRamPerGpu": 16}}  # fmt: skip
    with pytest.raises(AssertionError, match="minRamPerGpu"):
        runpod_v2_spec().validate_request("POST", "/v2/pods", body=json.dumps(body).encode())
    with RunPodSandbox() as sandbox:
        request = urllib.request.Request(
            sandbox.url + "/v2/pods", data=json.dumps(body).encode(), method="POST"
        )
        request.add_header("Authorization", f"Bearer {sandbox.api_key}")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        problem = json.loads(caught.value.read())
    assert caught.value.code == 422
    assert problem["errors"] == ["body.gpu.minRamPerGpu: is not a known field"]
