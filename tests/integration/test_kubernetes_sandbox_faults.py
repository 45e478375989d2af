"""Fault injection of the Kubernetes API sandbox, observed through the real `kubernetes` client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from helpers.kubernetes_sandbox import pod_manifest, raw_request, wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import Faults, KubernetesSandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        yield running


@pytest.fixture(autouse=True)
def healthy(sandbox: KubernetesSandbox) -> Iterator[None]:
    sandbox.faults.reset()
    yield
    sandbox.faults.reset()


@pytest.fixture(scope="module")
def core(sandbox: KubernetesSandbox) -> Any:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(sandbox.kubeconfig_path)))


def reasons(sandbox: KubernetesSandbox, name: str, type_: str = "Warning") -> list[str]:
    return [
        e["reason"]
        for e in sandbox.events()
        if e["involvedObject"]["name"] == name and e["type"] == type_
    ]


@pytest.mark.parametrize("status", [409, 403, 500])
def test_reject_next_matching_call(sandbox: KubernetesSandbox, core: Any, status: int) -> None:
    sandbox.faults.reject_next("POST", r"/pods$", status, message="quota exceeded: failed quota")
    core.list_namespaced_pod("default")  # not matching: untouched
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("default", pod_manifest(f"rejected-{status}", ["true"]))
    assert caught.value.status == status
    assert json.loads(caught.value.body)["message"] == "quota exceeded: failed quota"
    assert sandbox.pod(f"rejected-{status}") is None
    core.create_namespaced_pod("default", pod_manifest(f"rejected-{status}", ["true"]))  # once only


def test_image_pull_failure_never_runs(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.image_pull_failure = r"typo"
    core.create_namespaced_pod(
        "default", pod_manifest("pull", ["touch", "ran"], image="alpine:typo")
    )

    def backoff() -> Any:
        statuses = (sandbox.pod("pull") or {}).get("status", {}).get("containerStatuses") or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason") == "ImagePullBackOff"

    wait_until(backoff, what="ImagePullBackOff")
    pod = core.read_namespaced_pod("pull", "default")
    assert pod.status.phase == "Pending"
    assert "Failed" in reasons(sandbox, "pull")
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("pull", "default")
    assert caught.value.status == 400 and "waiting to start" in caught.value.body
    core.delete_namespaced_pod("pull", "default")


def test_oom_kill_by_image_and_after_bytes(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.oom_kill_image = r"^hungry$"
    core.create_namespaced_pod("default", pod_manifest("oom-now", ["sleep", "30"], image="hungry"))
    sandbox.faults.oom_kill_image = None
    sandbox.faults.oom_after_bytes = 1000
    core.create_namespaced_pod(
        "default", pod_manifest("oom-later", ["sh", "-c", "yes | head -c 100000; sleep 30"])
    )
    for name in ("oom-now", "oom-later"):
        pod = wait_phase(sandbox, name, "Failed")
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    assert len(core.read_namespaced_pod_log("oom-later", "default")) >= 1000


def test_pod_deleted_underneath(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.delete_pod_after_seconds = 0.3
    core.create_namespaced_pod("default", pod_manifest("vanishing", ["sleep", "30"]))
    wait_phase(sandbox, "vanishing", "Running")
    wait_until(lambda: sandbox.pod("vanishing") is None, what="pod deleted")
    assert not any(d.name == "vanishing" for d in sandbox.deletions)  # nobody asked for it


def test_slow_start_and_latency(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.slow_start_seconds = 0.4
    started = time.monotonic()
    core.create_namespaced_pod("default", pod_manifest("slow", ["true"]))
    wait_phase(sandbox, "slow", "Succeeded")
    assert time.monotonic() - started >= 0.4
    sandbox.faults.latency_ms = 50
    started = time.monotonic()
    core.read_namespaced_pod("slow", "default")
    assert time.monotonic() - started >= 0.05


def test_unschedulable_stays_pending_with_a_warning(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.unschedulable = True
    core.create_namespaced_pod("default", pod_manifest("nowhere", ["true"]))
    wait_until(lambda: "FailedScheduling" in reasons(sandbox, "nowhere"), what="FailedScheduling")
    pod = core.read_namespaced_pod("nowhere", "default")
    assert pod.status.phase == "Pending"
    assert [(c.type, c.status, c.reason) for c in pod.status.conditions] == [
        ("PodScheduled", "False", "Unschedulable")
    ]


def test_init_container_stuck(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.init_container_waiting_reason = "ImagePullBackOff"
    manifest = pod_manifest("init-stuck", ["true"])
    manifest["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox", "command": ["true"]}
    ]
    core.create_namespaced_pod("default", manifest)

    def stuck() -> Any:
        statuses = (sandbox.pod("init-stuck") or {}).get("status", {}).get(
            "initContainerStatuses"
        ) or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason") == "ImagePullBackOff"

    wait_until(stuck, what="stuck init container")
    pod = core.read_namespaced_pod("init-stuck", "default")
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "PodInitializing"


def test_init_containers_run_before_app_containers(sandbox: KubernetesSandbox, core: Any) -> None:
    manifest = pod_manifest("init-ok", ["sh", "-c", "cat marker"])
    manifest["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox", "command": ["sh", "-c", "echo from-init > marker"]}
    ]
    core.create_namespaced_pod("default", manifest)
    wait_phase(sandbox, "init-ok", "Succeeded")
    assert core.read_namespaced_pod_log("init-ok", "default") == "from-init\n"


def test_log_stream_aborted_mid_run(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.drop_log(10, mode="abort")
    core.create_namespaced_pod(
        "default", pod_manifest("drop", ["sh", "-c", "echo 0123456789abcdef; sleep 30"])
    )
    wait_phase(sandbox, "drop", "Running")
    response = core.read_namespaced_pod_log("drop", "default", follow=True, _preload_content=False)
    received = b""
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for chunk in response.stream(amt=None):
            received += chunk
    assert received == b"" or b"0123456789".startswith(received)
    # The next stream is healthy again and the container still runs.
    again = core.read_namespaced_pod_log("drop", "default", _preload_content=False)
    assert again.data == b"0123456789abcdef\n"
    assert sandbox.pod("drop")["status"]["phase"] == "Running"
    core.delete_namespaced_pod("drop", "default")


def test_log_stream_ends_cleanly_while_running(sandbox: KubernetesSandbox, core: Any) -> None:
    sandbox.faults.drop_log(4, mode="eof", pod="eof-.*")
    core.create_namespaced_pod(
        "default", pod_manifest("eof-pod", ["sh", "-c", "echo hello; sleep 30"])
    )
    wait_phase(sandbox, "eof-pod", "Running")
    wait_until(lambda: sandbox.log_bytes("eof-pod") == b"hello\n", what="output")
    response = core.read_namespaced_pod_log(
        "eof-pod", "default", follow=True, _preload_content=False
    )
    assert b"".join(response.stream(amt=None)) == b"hell"
    assert sandbox.pod("eof-pod")["status"]["phase"] == "Running"
    core.delete_namespaced_pod("eof-pod", "default")


def test_log_response_cap_ends_every_response_cleanly(
    sandbox: KubernetesSandbox, core: Any
) -> None:
    sandbox.faults.update_from_json({"log_response_cap": 7})
    core.create_namespaced_pod("default", pod_manifest("capped", ["sh", "-c", "echo 0123456789"]))
    wait_phase(sandbox, "capped", "Succeeded")
    for _ in range(2):  # every response, not just the next one
        plain = core.read_namespaced_pod_log("capped", "default", _preload_content=False)
        assert plain.data == b"0123456"
    stamped = core.read_namespaced_pod_log(
        "capped", "default", timestamps=True, _preload_content=False
    )
    assert len(stamped.data) == 7 and stamped.data[:4].isdigit()  # a cut timestamp
    limited = core.read_namespaced_pod_log(
        "capped", "default", limit_bytes=3, _preload_content=False
    )
    assert limited.data == b"012"  # the smaller of limitBytes and the cap
    sandbox.faults.reset()
    assert core.read_namespaced_pod_log("capped", "default") == "0123456789\n"
    core.delete_namespaced_pod("capped", "default")


def test_follow_ends_when_the_pod_is_deleted(sandbox: KubernetesSandbox, core: Any) -> None:
    core.create_namespaced_pod(
        "default", pod_manifest("follow-del", ["sh", "-c", "echo up; sleep 30"])
    )
    wait_phase(sandbox, "follow-del", "Running")
    response = core.read_namespaced_pod_log(
        "follow-del", "default", follow=True, _preload_content=False
    )
    chunks = response.stream(amt=None)
    assert next(chunks) == b"up\n"
    core.delete_namespaced_pod("follow-del", "default")
    assert b"".join(chunks) == b""


def test_control_endpoint_scripts_faults(sandbox: KubernetesSandbox, core: Any) -> None:
    code, body = raw_request(
        sandbox,
        "POST",
        "/sandbox/faults",
        {"latency_ms": 1, "reject": [{"method": "DELETE", "path": "/pods/", "status": 500}]},
    )
    assert code == 200 and json.loads(body)["latency_ms"] == 1
    assert sandbox.faults.latency_ms == 1 and len(sandbox.faults.reject) == 1
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_pod("whatever", "default")
    assert caught.value.status == 500
    code, body = raw_request(sandbox, "POST", "/sandbox/faults", {"no_such_knob": 1})
    assert code == 400
    code, _ = raw_request(sandbox, "DELETE", "/sandbox/faults")
    assert code == 200 and sandbox.faults.to_json() == Faults().to_json()
    code, _ = raw_request(sandbox, "GET", "/sandbox/faults", token="")
    assert code == 401
