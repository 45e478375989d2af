"""Declared nodes and the scheduler, through the official client and kubectl: GPU capacity,
labels and taints decide where a pod binds; a pod that fits nowhere stays Pending with
kube-scheduler's FailedScheduling words until room is freed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers.components import require_executable
from helpers.kubectl import Kubectl
from helpers.kubernetes_sandbox import pod_manifest, wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.errors import UsageError
from pegboard.domain.kubernetes.scheduling import Hindrance, scheduling_verdict

A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
NODES = [
    {"name": "a100-0", "labels": A100, "capacity": {"nvidia.com/gpu": 2}, "taints": [GPU_TAINT]},
    {"name": "h100-0", "labels": H100, "capacity": {"nvidia.com/gpu": 8}, "taints": [GPU_TAINT]},
    {"name": "cpu-0", "capacity": {"cpu": "4", "memory": "16Gi"}},
]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2, nodes=NODES) as running:
        yield running


@pytest.fixture(scope="module")
def core(sandbox: KubernetesSandbox) -> kubernetes.client.CoreV1Api:
    api = kubernetes.config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))
    return kubernetes.client.CoreV1Api(api)


def gpu_pod(
    name: str,
    gpus: int,
    selector: dict[str, str] | None,
    *,
    tolerate: bool = True,
    command: list[str] | None = None,
) -> dict[str, Any]:
    manifest = pod_manifest(
        name, command or ["sleep", "600"], resources={"limits": {"nvidia.com/gpu": str(gpus)}}
    )
    if selector:
        manifest["spec"]["nodeSelector"] = selector
    if tolerate:
        manifest["spec"]["tolerations"] = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
    return manifest


def _failed_scheduling(sandbox: KubernetesSandbox, name: str) -> list[str]:
    pod = sandbox.pod(name)
    assert pod is not None
    return [
        e["message"]
        for e in sandbox.events()
        if e["reason"] == "FailedScheduling"
        and e["involvedObject"]["uid"] == pod["metadata"]["uid"]
    ]


def _unschedulable(sandbox: KubernetesSandbox, name: str) -> str:
    def message() -> str | None:
        pod = sandbox.pod(name)
        for condition in (pod or {}).get("status", {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return str(condition["message"])
        return None

    found: str = wait_until(message, what=f"{name} unschedulable")
    return found


def _delete(core: kubernetes.client.CoreV1Api, sandbox: KubernetesSandbox, *names: str) -> None:
    for name in names:
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    wait_until(lambda: all(sandbox.pod(n) is None for n in names), what="pods gone")


def test_the_declared_nodes_are_listed_with_labels_capacity_and_taints(
    core: kubernetes.client.CoreV1Api,
) -> None:
    nodes = {node.metadata.name: node for node in core.list_node().items}
    assert sorted(nodes) == ["a100-0", "cpu-0", "h100-0"]
    a100 = nodes["a100-0"]
    assert a100.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert a100.metadata.labels["kubernetes.io/hostname"] == "a100-0"
    assert a100.status.capacity["nvidia.com/gpu"] == "2"
    assert a100.status.allocatable["nvidia.com/gpu"] == "2"
    assert [(t.key, t.value, t.effect) for t in a100.spec.taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule")
    ]
    assert core.read_node("cpu-0").status.capacity["cpu"] == "4"
    with pytest.raises(kubernetes.client.ApiException) as missing:
        core.read_node("nope")
    assert missing.value.status == 404


def test_kubectl_get_nodes_prints_the_servers_table(
    sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = require_executable("kubectl", path="/usr/bin/kubectl", install_hint="kubectl >= 1.27")
    kubectl = Kubectl(path, sandbox, tmp_path_factory.mktemp("kubectl-home"))
    lines = kubectl("get", "nodes").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["a100-0", "Ready"], ["cpu-0", "Ready"], ["h100-0", "Ready"]
    ]  # fmt: skip
    shown = kubectl(
        "get", "node", "h100-0", "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu}"
    )
    assert shown.stdout == "8"


def test_a_gpu_pod_waits_unschedulable_until_a_pod_frees_its_gpus(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", gpu_pod("holder", 2, A100))
    assert wait_phase(sandbox, "holder", "Running")["spec"]["nodeName"] == "a100-0"
    core.create_namespaced_pod("default", gpu_pod("waiter", 1, A100))
    message = _unschedulable(sandbox, "waiter")
    assert message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's "
        "node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims "
        "found for incoming pod, 2 Preemption is not helpful for scheduling."
    )
    assert wait_until(lambda: _failed_scheduling(sandbox, "waiter"), what="the event") == [message]
    waiting = core.read_namespaced_pod("waiter", "default")
    assert waiting.status.phase == "Pending"
    assert waiting.spec.node_name is None
    verdict = scheduling_verdict(sandbox.pod("waiter") or {}, sandbox.events())
    assert verdict.unschedulable
    assert verdict.reasons == {Hindrance.INSUFFICIENT, Hindrance.SELECTOR}
    _delete(core, sandbox, "holder")
    assert wait_phase(sandbox, "waiter", "Running")["spec"]["nodeName"] == "a100-0"
    _delete(core, sandbox, "waiter")


def test_a_finished_pod_no_longer_holds_its_gpus(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", gpu_pod("short-job", 8, H100, command=["true"]))
    assert wait_phase(sandbox, "short-job", "Succeeded")["spec"]["nodeName"] == "h100-0"
    core.create_namespaced_pod("default", gpu_pod("next-job", 8, H100))
    assert wait_phase(sandbox, "next-job", "Running")["spec"]["nodeName"] == "h100-0"
    _delete(core, sandbox, "short-job", "next-job")


def test_an_untolerated_taint_and_a_selector_nobody_matches(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", gpu_pod("no-toleration", 1, A100, tolerate=False))
    # TaintToleration filters before NodeAffinity: both GPU nodes fail on the taint first.
    assert _unschedulable(sandbox, "no-toleration") == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )
    unknown = {"nvidia.com/gpu.product": "NVIDIA-B200"}
    core.create_namespaced_pod("default", gpu_pod("no-such-type", 1, unknown))
    assert _unschedulable(sandbox, "no-such-type") == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    too_many = gpu_pod("too-many", 9, None)
    core.create_namespaced_pod("default", too_many)
    assert _unschedulable(sandbox, "too-many") == (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod."
    )
    _delete(core, sandbox, "no-toleration", "no-such-type", "too-many")


def test_required_node_affinity_and_cpu_requests_count(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    either = gpu_pod("either-type", 4, None)
    either["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                           "values": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}]}
                ]
            }
        }
    }  # fmt: skip
    core.create_namespaced_pod("default", either)
    assert wait_phase(sandbox, "either-type", "Running")["spec"]["nodeName"] == "h100-0"
    big = pod_manifest("big-cpu", ["sleep", "600"], resources={"requests": {"cpu": "3"}})
    core.create_namespaced_pod("default", big)
    assert wait_phase(sandbox, "big-cpu", "Running")["spec"]["nodeName"] == "cpu-0"
    more = pod_manifest("more-cpu", ["sleep", "600"], resources={"requests": {"cpu": "1500m"}})
    core.create_namespaced_pod("default", more)
    assert _unschedulable(sandbox, "more-cpu").startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint "
        "{nvidia.com/gpu: present}."
    )
    _delete(core, sandbox, "either-type", "big-cpu", "more-cpu")


def test_a_node_added_later_takes_a_waiting_pod(
    sandbox: KubernetesSandbox, core: kubernetes.client.CoreV1Api
) -> None:
    l4 = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    core.create_namespaced_pod("default", gpu_pod("wants-l4", 1, l4))
    _unschedulable(sandbox, "wants-l4")
    sandbox.add_nodes({"name": "l4-0", "labels": l4, "capacity": {"nvidia.com/gpu": 1}})
    try:
        assert wait_phase(sandbox, "wants-l4", "Running")["spec"]["nodeName"] == "l4-0"
        _delete(core, sandbox, "wants-l4")
    finally:
        sandbox.remove_node("l4-0")


def test_without_declared_nodes_one_node_fits_every_pod() -> None:
    with KubernetesSandbox(kill_grace_seconds=0.2) as plain:
        api = kubernetes.config.new_client_from_config(config_file=str(plain.kubeconfig_path))
        core = kubernetes.client.CoreV1Api(api)
        assert [node.metadata.name for node in core.list_node().items] == ["sandbox-node"]
        core.create_namespaced_pod("default", gpu_pod("anything", 64, A100, command=["true"]))
        assert wait_phase(plain, "anything", "Succeeded")["spec"]["nodeName"] == "sandbox-node"


@pytest.mark.parametrize(
    ("node", "complaint"),
    [
        ({"labels": {}}, "a name is required"),
        ({"name": "x", "gpus": 8}, "unknown key 'gpus'"),
        ({"name": "x", "taints": ["gpu:Sometimes"]}, "taint"),
        ({"name": "x", "capacity": {"nvidia.com/gpu": "eight"}}, "is not a resource quantity"),
    ],
)
def test_a_bad_node_declaration_is_one_clear_error(node: dict[str, Any], complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        KubernetesSandbox(nodes=[node])
