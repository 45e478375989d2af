"""Every REST v2 answer of the RunPod API sandbox against RunPod's published document
(tests/data/runpod/openapi-v2.json): each served operation is driven through its success and
error paths, every response is validated (status documented, Content-Type, problem details,
Retry-After on 429, no field the document does not declare), and the last test checks that
every operation was seen answering. One sandbox for the module (pods answer an SSH banner)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from helpers.runpod_openapi import runpod_v2_spec
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.faults import StockOut, Throttle

# The last test checks what every other test of the module saw: on xdist, all on one worker.
pytestmark = pytest.mark.xdist_group("runpod_v2_openapi")

SEEN: dict[str, set[int]] = {}
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGp5b3VyLWtleS1ieXRlcy1oZXJlLXRlc3Q contract"
RTX3090 = "NVIDIA GeForce RTX 3090"


class Client:
    """Raw HTTP (urllib), so nothing between the test and the wire reshapes an answer."""

    def __init__(self, sandbox: RunPodSandbox) -> None:
        self.sandbox = sandbox

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        key: str | None = "",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.sandbox.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if key is not None:
            request.add_header("Authorization", f"Bearer {key or self.sandbox.api_key}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, got, content = answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            status, got, content = exc.code, dict(exc.headers), exc.read()
        op = runpod_v2_spec().validate_response(method, path, status, got, content)
        SEEN.setdefault(op.operation_id, set()).add(status)
        if status not in (401,):
            assert "RateLimit" in got and "RateLimit-Policy" in got, (method, path, status)
        if content and got.get("Content-Type", "").startswith("application/"):
            return status, got, json.loads(content)
        return status, got, content


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunPodSandbox]:
    with RunPodSandbox(public_keys=[SSH_KEY]) as server:
        yield server


@pytest.fixture
def api(sandbox: RunPodSandbox) -> Iterator[Client]:
    sandbox.faults.reset()
    yield Client(sandbox)
    sandbox.faults.reset()


def _create(api: Client, **extra: Any) -> dict[str, Any]:
    body = {"name": "contract", "image": "runpod/base:1.0", "gpu": {"id": RTX3090, "count": 1}}
    status, _, pod = api.call("POST", "/v2/pods", body | extra)
    assert status == 201, pod
    return pod


def test_the_pod_lifecycle_answers_as_documented(api: Client) -> None:
    pod = _create(api, ports=["22/tcp", "8888/http"], startSsh=True, env={"A": "1"})
    assert pod["status"] == "PROVISIONING" and pod["ssh"]["direct"] is None
    pid = pod["id"]
    status, _, got = api.call("GET", f"/v2/pods/{pid}")
    assert status == 200 and got["status"] == "RUNNING"
    assert got["ssh"]["direct"]["port"] == got["runtime"]["ports"][0]["public"]
    assert got["env"]["PUBLIC_KEY"] == SSH_KEY  # startSsh injects the account's keys
    assert got["cost"] == 0.43 and got["gpu"] == {"id": RTX3090, "count": 1}
    assert api.call("GET", "/v2/pods")[2]["pods"][0]["id"] == pid
    assert api.call("GET", "/v2/pods?includeClusterPods=true")[0] == 200
    status, _, got = api.call("PATCH", f"/v2/pods/{pid}", {"name": "renamed", "locked": True})
    assert (status, got["name"], got["locked"]) == (200, "renamed", True)
    assert api.call("POST", f"/v2/pods/{pid}/action", {"action": "stop"})[0] == 400  # locked
    api.call("PATCH", f"/v2/pods/{pid}", {"locked": False})
    status, _, got = api.call("POST", f"/v2/pods/{pid}/action", {"action": "restart"})
    assert status == 200 and got["status"] in ("STARTING", "RUNNING")
    status, _, got = api.call("POST", f"/v2/pods/{pid}/action", {"action": "stop"})
    assert (status, got["status"], got["cost"], got["runtime"]) == (200, "EXITED", 0.0, None)
    assert got["actions"] == ["start", "terminate"]
    assert api.call("POST", f"/v2/pods/{pid}/action", {"action": "stop"})[0] == 409
    status, _, got = api.call("POST", f"/v2/pods/{pid}/action", {"action": "start"})
    assert (status, got["status"]) == (200, "RUNNING")
    assert api.call("POST", f"/v2/pods/{pid}/action", {"action": "terminate"})[0] == 204
    assert api.call("GET", f"/v2/pods/{pid}")[0] == 404
    assert api.call("DELETE", f"/v2/pods/{pid}")[0] == 404


def test_starting_until_the_ssh_delay_and_no_ssh_without_22_tcp(
    api: Client, sandbox: RunPodSandbox
) -> None:
    sandbox.faults.ssh_ready_delay_sec = 3600
    slow = _create(api, ports=["22/tcp"])
    got = api.call("GET", f"/v2/pods/{slow['id']}")[2]
    assert (got["status"], got["ssh"]["direct"], got["runtime"]) == ("STARTING", None, None)
    assert got["actions"] == ["stop", "terminate"]
    sandbox.faults.ssh_ready_delay_sec = 0
    web = _create(api, ports=["8888/http"])
    got = api.call("GET", f"/v2/pods/{web['id']}")[2]
    assert (got["status"], got["ssh"]["direct"]) == ("RUNNING", None)
    assert got["runtime"]["ports"] == [
        {"private": 8888, "public": None, "type": "http", "ip": None}
    ]
    sandbox.faults.ssh_never_ready = True
    mute = _create(api, ports=["22/tcp"])
    got = api.call("GET", f"/v2/pods/{mute['id']}")[2]
    assert (got["status"], got["ssh"]["direct"], got["runtime"]["ports"]) == ("RUNNING", None, [])
    for pod in (slow, web, mute):
        api.call("DELETE", f"/v2/pods/{pod['id']}")


def test_logs_are_server_sent_events_with_resumable_ids(api: Client) -> None:
    pid = _create(api)["id"]
    api.call("GET", f"/v2/pods/{pid}")
    api.call("POST", f"/v2/pods/{pid}/action", {"action": "stop"})
    status, headers, body = api.call("GET", f"/v2/pods/{pid}/logs")
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [e for e in body.decode().split("\n\n") if e.startswith("id: ")]
    lines = [json.loads(e.split("data: ", 1)[1])["line"] for e in events]
    assert (
        lines[0].startswith("create pod: 1 x NVIDIA GeForce RTX 3090") and "stop container" in lines
    )
    last = events[1].split("\n")[0].removeprefix("id: ")
    _, _, resumed = api.call("GET", f"/v2/pods/{pid}/logs", headers={"Last-Event-ID": last})
    assert resumed.decode().count("id: ") == len(events) - 2
    _, _, system = api.call("GET", f"/v2/pods/{pid}/logs?source=container")
    assert b"system" not in system
    assert api.call("GET", f"/v2/pods/{pid}/logs?tail=9999")[0] == 422
    assert api.call("GET", "/v2/pods/nope/logs")[0] == 404
    api.call("DELETE", f"/v2/pods/{pid}")


def test_a_running_pods_log_stream_follows_new_lines(api: Client, sandbox: RunPodSandbox) -> None:
    import http.client

    pid = _create(api, ports=["22/tcp"])["id"]
    connection = http.client.HTTPConnection(
        "127.0.0.1", int(sandbox.url.rsplit(":", 1)[1]), timeout=10
    )
    connection.request(
        "GET", f"/v2/pods/{pid}/logs?tail=1", headers={"Authorization": f"Bearer {sandbox.api_key}"}
    )
    answer = connection.getresponse()
    assert answer.status == 200 and answer.getheader("Cache-Control") == "no-cache"
    first = answer.read1()
    api.call("POST", f"/v2/pods/{pid}/action", {"action": "stop"})  # the stream ends with the pod
    rest = answer.read()
    connection.close()
    headers = dict(answer.getheaders())
    op = runpod_v2_spec().validate_response(
        "GET", f"/v2/pods/{pid}/logs", 200, headers, first + rest
    )
    SEEN.setdefault(op.operation_id, set()).add(200)
    assert first.count(b"id: ") == 1 and b"stop container" in rest
    api.call("DELETE", f"/v2/pods/{pid}")


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"name": "x", "image": "i", "gpuTypeId": RTX3090}, 422, "gpuTypeId"),
        ({"name": "x", "image": "i", "gpu": {"id": RTX3090, "minRamPerGpu": 8}}, 422, "minRamPerGpu"),
        ({"name": "x", "gpu": {"id": RTX3090}}, 422, "image"),
        ({"name": "x", "image": "i"}, 400, "exactly one of gpu or cpu"),
        ({"name": "x", "image": "i", "gpu": {"id": "NVIDIA GeForce GTX 9999"}}, 400, "Unknown GPU"),
        ({"name": "x", "image": "i", "gpu": {"id": RTX3090, "count": 99}}, 400, "gpuCount"),
        ({"name": "x", "image": "i", "gpu": {"id": RTX3090}, "templateId": "t1"}, 404, "template"),
        (
            {"name": "x", "image": "i", "gpu": {"id": RTX3090}, "dataCenterIds": ["US-CA-2"],
             "mounts": {"network": [{"volumeId": "nv-pidws100", "path": "/workspace"}]}},
            400,
            "is in EU-RO-1",
        ),
        (
            {"name": "x", "image": "i", "gpu": {"id": RTX3090},
             "mounts": {"network": [{"volumeId": "nv-missing", "path": "/w"}]}},
            404,
            "not found",
        ),
        ({"name": "x", "image": "i", "gpu": {"id": RTX3090, "allowedCudaVersions": ["9.0"]}}, 400, "no longer any instances"),
        ({"name": "x", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 3}}, 400, "power of two"),
    ],
)  # fmt: skip
def test_create_refusals_are_problem_details(
    api: Client, body: dict[str, Any], status: int, needle: str
) -> None:
    got, _, problem = api.call("POST", "/v2/pods", body)
    assert got == status, problem
    assert needle in json.dumps(problem)


def test_a_body_that_is_not_json_is_400_and_a_missing_one_422(api: Client) -> None:
    assert api.call("POST", "/v2/pods", raw=b"{nope")[0] == 400
    assert api.call("POST", "/v2/pods", raw=b"")[0] == 422


def test_capacity_faults_answer_400_and_resume_without_gpus_too(
    api: Client, sandbox: RunPodSandbox
) -> None:
    sandbox.faults.stock_out_at_create.append(StockOut(RTX3090, "EU-RO-1"))
    body = {"name": "x", "image": "i", "gpu": {"id": RTX3090}, "dataCenterIds": ["EU-RO-1"]}
    status, _, problem = api.call("POST", "/v2/pods", body)
    assert status == 400 and "no longer any instances" in problem["detail"]
    pod = _create(api)
    api.call("POST", f"/v2/pods/{pod['id']}/action", {"action": "stop"})
    sandbox.faults.resume_without_free_gpus = 1
    status, _, problem = api.call("POST", f"/v2/pods/{pod['id']}/action", {"action": "start"})
    assert status == 400 and "not enough free GPUs" in problem["detail"]
    api.call("DELETE", f"/v2/pods/{pod['id']}")


def test_a_5xx_after_create_leaves_the_pod_and_cpu_pods_work(
    api: Client, sandbox: RunPodSandbox
) -> None:
    sandbox.faults.create_5xx_after_pod_exists = 1
    body = {"name": "after-5xx", "image": "i", "gpu": {"id": RTX3090}}
    assert api.call("POST", "/v2/pods", body)[0] == 502
    left = [p for p in api.call("GET", "/v2/pods")[2]["pods"] if p["name"] == "after-5xx"]
    assert len(left) == 1
    api.call("DELETE", f"/v2/pods/{left[0]['id']}")
    status, _, cpu = api.call(
        "POST", "/v2/pods", {"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 4}}
    )
    assert status == 201 and cpu["cpu"] == {"id": "cpu3c", "vcpuCount": 4, "memory": 8}
    assert "gpu" not in cpu and cpu["cost"] == pytest.approx(0.12)
    api.call("DELETE", f"/v2/pods/{cpu['id']}")


def test_throttling_is_429_with_retry_after_and_quota_headers(
    api: Client, sandbox: RunPodSandbox
) -> None:
    sandbox.faults.throttle.append(Throttle("getPod", times=1, retry_after_sec=7))
    status, headers, problem = api.call("GET", "/v2/pods/anything")
    assert (status, headers["Retry-After"], problem["status"]) == (429, "7", 429)
    assert api.call("GET", "/v2/pods/anything")[0] == 404  # consumed
    sandbox.faults.rate_limit_per_minute = 0
    status, headers, _ = api.call("POST", "/v2/pods", {"name": "x"})
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60
    assert (
        '"minute";r=0;' in headers["RateLimit"]
        and '"minute";q=0;w=60' in headers["RateLimit-Policy"]
    )
    sandbox.faults.reset()
    sandbox.faults.http_503["listPods"] = 1
    assert api.call("GET", "/v2/pods")[0] == 503


def test_the_bearer_key_is_required_everywhere(api: Client) -> None:
    for op in runpod_v2_spec().operations:
        if op.operation_id not in SERVED:
            continue
        path = op.template.replace("{id}", "x")
        body = {} if "requestBody" in op.spec else None
        status, _, problem = api.call(op.method, path, body, key="wrong")
        assert status == 401 and problem["detail"] == "invalid bearer token"
    assert api.call("GET", "/v2/pods", key=None)[2]["detail"] == "missing bearer token"


def test_volumes_answer_as_documented(api: Client) -> None:
    status, _, volume = api.call(
        "POST",
        "/v2/network-volumes",
        {"name": "data", "size": 50, "dataCenter": "US-TX-3", "type": "HIGH_PERFORMANCE"},
    )
    assert status == 201 and volume["type"] == "HIGH_PERFORMANCE"
    vid = volume["id"]
    assert (
        api.call(
            "POST",
            "/v2/network-volumes",
            {"name": "d", "size": 50, "dataCenter": "EU-SE-1", "type": "HIGH_PERFORMANCE"},
        )[0]
        == 400
    )
    assert (
        api.call("POST", "/v2/network-volumes", {"name": "d", "size": 5, "dataCenter": "EU-SE-1"})[
            0
        ]
        == 422
    )
    assert api.call("GET", f"/v2/network-volumes/{vid}")[2] == volume
    assert vid in [v["id"] for v in api.call("GET", "/v2/network-volumes")[2]["networkVolumes"]]
    assert api.call("PATCH", f"/v2/network-volumes/{vid}", {"size": 40})[0] == 400
    assert api.call("PATCH", f"/v2/network-volumes/{vid}", {})[0] == 422
    assert api.call("PATCH", f"/v2/network-volumes/{vid}", {"size": 60})[2]["size"] == 60
    pod = _create(api, mounts={"network": [{"volumeId": vid, "path": "/data"}]})
    assert pod["dataCenterId"] == "US-TX-3" and pod["mounts"]["network"][0]["volumeId"] == vid
    assert (
        api.call(
            "PATCH",
            f"/v2/pods/{pod['id']}",
            {"mounts": {"network": [{"volumeId": "other", "path": "/d"}]}},
        )[0]
        == 400
    )
    assert api.call("PATCH", f"/v2/pods/{pod['id']}", {"mounts": {"network": []}})[0] == 400
    assert api.call("PATCH", f"/v2/pods/{pod['id']}", {"bogus": 1})[0] == 422
    assert api.call("DELETE", f"/v2/network-volumes/{vid}")[0] == 400  # in use
    api.call("DELETE", f"/v2/pods/{pod['id']}")
    assert api.call("DELETE", f"/v2/network-volumes/{vid}")[0] == 204
    assert api.call("GET", f"/v2/network-volumes/{vid}")[0] == 404


def test_the_catalog_answers_with_stock(api: Client, sandbox: RunPodSandbox) -> None:
    _, _, gpus = api.call("GET", "/v2/catalog/gpus")
    ids = [g["id"] for g in gpus["gpus"]]
    assert (
        RTX3090 in ids
        and "NVIDIA GeForce RTX 4090" in ids
        and "availability" not in gpus["gpus"][0]
    )
    sandbox.catalog.set_stock(RTX3090, "EU-RO-1", "Low")
    sandbox.catalog.set_stock(RTX3090, "EU-SE-1", None)
    _, _, one = api.call(
        "GET", f"/v2/catalog/gpus/{quote(RTX3090)}?include=AVAILABILITY&product=POD"
    )
    by_dc = {d["id"]: d["availability"] for d in one["dataCenters"]}
    assert by_dc["EU-RO-1"] == "LOW" and "EU-SE-1" not in by_dc and one["availability"] == "HIGH"
    _, _, eu = api.call("GET", "/v2/catalog/gpus?include=AVAILABILITY&product=POD&countryCodes=SE")
    assert RTX3090 not in [g["id"] for g in eu["gpus"]]
    _, _, big = api.call(
        "GET", f"/v2/catalog/gpus/{quote(RTX3090)}?include=AVAILABILITY&product=POD&count=64"
    )
    assert big["availability"] == "NONE" and "dataCenters" not in big
    _, _, cuda = api.call(
        "GET",
        f"/v2/catalog/gpus/{quote(RTX3090)}?include=AVAILABILITY&product=POD&minCudaVersion=12.6",
    )
    assert [c["version"] for c in cuda["cudaVersions"]] == ["12.6", "12.8"]
    assert api.call("GET", "/v2/catalog/gpus?include=AVAILABILITY")[0] == 400
    assert api.call("GET", "/v2/catalog/gpus?count=2")[0] == 400
    assert api.call("GET", "/v2/catalog/gpus?include=NOPE")[0] == 422
    assert api.call("GET", "/v2/catalog/gpus/NVIDIA%20Nope")[0] == 404
    _, _, cpus = api.call("GET", "/v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=4")
    assert cpus["cpus"][0]["availability"] == "HIGH"
    assert api.call("GET", "/v2/catalog/cpus/cpu3c")[0] == 200
    assert api.call("GET", "/v2/catalog/cpus/cpu9z")[0] == 404
    assert (
        api.call("GET", "/v2/catalog/cpus?vcpuCount=3&include=AVAILABILITY&product=POD")[0] == 400
    )
    _, _, dcs = api.call(
        "GET", "/v2/catalog/datacenters?regions=EUROPE&include=GPU_AVAILABILITY,CPU_AVAILABILITY"
    )
    assert {d["region"] for d in dcs["dataCenters"]} == {"EUROPE"}
    ro = next(d for d in dcs["dataCenters"] if d["id"] == "EU-RO-1")
    assert {g["id"]: g["availability"] for g in ro["gpuAvailability"]}[RTX3090] == "LOW"
    _, _, hp = api.call(
        "GET",
        "/v2/catalog/datacenters?networkVolumeTypes=STANDARD,HIGH_PERFORMANCE&globalNetwork=true",
    )
    assert all(
        "HIGH_PERFORMANCE" in d["networkVolumeTypes"] and d["globalNetwork"]
        for d in hp["dataCenters"]
    )
    assert api.call("GET", "/v2/catalog/datacenters/EU-RO-1")[0] == 200
    assert api.call("GET", "/v2/catalog/datacenters/MARS-1")[0] == 404
    assert api.call("GET", "/v2/catalog/datacenters?regions=MARS")[0] == 422


def test_billing_and_account_keys(api: Client, sandbox: RunPodSandbox) -> None:
    pod = _create(api, mounts={"persistent": {"size": 20, "path": "/workspace"}})
    api.call("POST", f"/v2/pods/{pod['id']}/action", {"action": "stop"})
    _, _, bill = api.call("GET", f"/v2/billing/pods?podId={pod['id']}&bucketSize=hour&lastN=1")
    assert bill["metadata"]["recordCount"] == 1 and bill["records"][0]["podId"] == pod["id"]
    assert bill["metadata"]["query"]["podId"] == pod["id"]
    assert api.call("GET", "/v2/billing/pods")[0] == 200
    assert api.call("GET", "/v2/billing/pods?lastN=2&startTime=2026-01-01T00:00:00Z")[0] == 400
    assert api.call("GET", "/v2/billing/pods?bucketSize=fortnight")[0] == 422
    api.call("DELETE", f"/v2/pods/{pod['id']}")
    assert api.call("GET", "/v2/account/ssh-keys")[2] == {"keys": [SSH_KEY]}
    assert api.call("PUT", "/v2/account/ssh-keys", {"keys": ["not a key"]})[0] == 422
    assert api.call("PUT", "/v2/account/ssh-keys", {"keys": []})[2] == {"keys": []}
    nokey = _create(api, startSsh=True)
    assert "PUBLIC_KEY" not in nokey["env"]  # startSsh with no registered keys does nothing
    api.call("DELETE", f"/v2/pods/{nokey['id']}")
    assert api.call("PUT", "/v2/account/ssh-keys", {"keys": [SSH_KEY]})[2] == {"keys": [SSH_KEY]}
    assert sandbox.public_keys == [SSH_KEY]


def test_unknown_paths_and_methods(api: Client) -> None:
    request = urllib.request.Request(api.sandbox.url + "/v2/pods", method="DELETE")
    request.add_header("Authorization", f"Bearer {api.sandbox.api_key}")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 405 and caught.value.headers["Allow"] == "GET, POST"
    assert caught.value.headers["Content-Type"] == "application/problem+json"


SERVED = {
    "listPods", "createPod", "getPod", "updatePod", "deletePod", "podAction", "getPodLogs",
    "listNetworkVolumes", "createNetworkVolume", "getNetworkVolume", "updateNetworkVolume",
    "deleteNetworkVolume", "listGpuTypes", "getGpuType", "listCpuTypes", "getCpuType",
    "listDataCenters", "getDataCenter", "listPodBilling", "getSshKeys", "updateSshKeys",
}  # fmt: skip


def test_every_served_operation_was_seen_succeeding_and_failing() -> None:
    assert set(SEEN) == SERVED, sorted(SERVED ^ set(SEEN))
    for op_id, statuses in SEEN.items():
        assert any(200 <= s < 300 for s in statuses), op_id
        assert 401 in statuses, op_id
    assert {201, 400, 404, 422, 429, 502} <= SEEN["createPod"]
    assert {200, 204, 400, 409} <= SEEN["podAction"]
