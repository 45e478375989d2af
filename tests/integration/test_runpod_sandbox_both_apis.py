"""The RunPod sandbox's GraphQL and REST v2 are one account: a pod made over one is seen,
stopped, resumed and terminated over the other, as on RunPod (one backend behind both)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from helpers.runpod_openapi import validate_received_requests
from pegboard.adapters.sandboxes.runpod import RunPodSandbox

RTX3090 = "NVIDIA GeForce RTX 3090"


@pytest.fixture
def sandbox() -> Iterator[RunPodSandbox]:
    with RunPodSandbox(public_keys=["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA both"]) as server:
        yield server


def _http(sandbox: RunPodSandbox, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(sandbox.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {sandbox.api_key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            content = answer.read()
            return answer.status, json.loads(content) if content else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _graphql(sandbox: RunPodSandbox, query: str) -> Any:
    status, answer = _http(sandbox, "POST", "/graphql", {"query": query})
    assert status == 200 and "errors" not in answer, answer
    return answer["data"]


def test_a_v2_pod_is_a_graphql_pod_and_back(sandbox: RunPodSandbox) -> None:
    status, pod = _http(
        sandbox,
        "POST",
        "/v2/pods",
        {"name": "both", "image": "img", "gpu": {"id": RTX3090, "count": 2}, "cloud": "COMMUNITY",
         "dataCenterIds": ["US-TX-3"], "ports": ["22/tcp"], "env": {"K": "v"},
         "mounts": {"persistent": {"size": 20, "path": "/workspace"}}},
    )  # fmt: skip
    assert status == 201
    seen = _graphql(
        sandbox,
        f'query {{ pod(input: {{podId: "{pod["id"]}"}}) {{ id name imageName gpuCount costPerHr '
        "desiredStatus volumeInGb volumeMountPath env machine { gpuTypeId dataCenterId } } }",
    )["pod"]
    assert seen == {
        "id": pod["id"], "name": "both", "imageName": "img", "gpuCount": 2, "costPerHr": 0.44,
        "desiredStatus": "RUNNING", "volumeInGb": 20, "volumeMountPath": "/workspace",
        "env": ["K=v"], "machine": {"gpuTypeId": RTX3090, "dataCenterId": "US-TX-3"},
    }  # fmt: skip
    _graphql(sandbox, f'mutation {{ podStop(input: {{podId: "{pod["id"]}"}}) {{ id }} }}')
    assert _http(sandbox, "GET", f"/v2/pods/{pod['id']}")[1]["status"] == "EXITED"
    assert _http(sandbox, "POST", f"/v2/pods/{pod['id']}/action", {"action": "start"})[0] == 200
    mine = _graphql(sandbox, "query { myself { pods { id desiredStatus } } }")["myself"]["pods"]
    assert mine == [{"id": pod["id"], "desiredStatus": "RUNNING"}]
    assert _http(sandbox, "DELETE", f"/v2/pods/{pod['id']}")[0] == 204
    assert _graphql(sandbox, "query { myself { pods { id } } }")["myself"]["pods"] == []
    assert validate_received_requests(sandbox.received_v2) == 4  # this test's v2 requests conform


def test_a_graphql_pod_is_a_v2_pod(sandbox: RunPodSandbox) -> None:
    made = _graphql(
        sandbox,
        'mutation { podFindAndDeployOnDemand(input: {name: "g", imageName: "img", '
        f'gpuTypeId: "{RTX3090}", cloudType: SECURE, ports: "22/tcp,8888/http", '
        'volumeInGb: 10, volumeMountPath: "/workspace"}) { id } }',
    )["podFindAndDeployOnDemand"]
    status, pod = _http(sandbox, "GET", f"/v2/pods/{made['id']}")
    assert status == 200
    assert (pod["name"], pod["gpu"], pod["cloud"], pod["ports"]) == (
        "g",
        {"id": RTX3090, "count": 1},
        "SECURE",
        ["22/tcp", "8888/http"],
    )
    assert pod["mounts"] == {"persistent": {"size": 10, "path": "/workspace"}}
    assert pod["ssh"]["direct"]["port"] == sandbox.pod(made["id"]).ssh_port  # type: ignore[union-attr]
    # Keys set over v2 are the account's keys GraphQL reports.
    assert _http(sandbox, "PUT", "/v2/account/ssh-keys", {"keys": []})[0] == 200
    assert _graphql(sandbox, "query { myself { pubKey } }")["myself"]["pubKey"] == ""
    _graphql(sandbox, f'mutation {{ podTerminate(input: {{podId: "{made["id"]}"}}) }}')
    assert _http(sandbox, "GET", f"/v2/pods/{made['id']}")[0] == 404
