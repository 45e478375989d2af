"""Cluster.exec's contract against KubernetesCluster over the websocket exec of the Kubernetes
API sandbox (the official client's WSClient), plus what only the real adapter has."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from contract.cluster_contract import phase_is, unique, wait_for
from contract.cluster_exec_contract import ClusterExecContract
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.domain.errors import NotFound
from pegboard.domain.ports.cluster import JsonObject, ResourceKind

IMAGE = "busybox:1.36"


def _pod(name: str, script: str) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": IMAGE, "command": ["sh", "-c", script]}],
        },
    }


class SandboxExecDriver:
    def __init__(self, sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> None:
        self.sandbox = sandbox
        self.cluster = cluster
        self.namespace = sandbox.namespace
        self.timeout = 20.0
        self._running: str | None = None

    def _start(self, script: str, *phases: str) -> str:
        name = unique("exec")
        self.cluster.create(_pod(name, script), namespace=self.namespace)
        wait_for(self, ResourceKind.POD, name, phase_is(*phases))  # type: ignore[arg-type]
        return name

    def running_pod(self) -> str:
        if self._running is None:
            self._running = self._start("exec sleep 3600", "Running")
        return self._running

    def finished_pod(self) -> str:
        return self._start("true", "Succeeded")

    def expect(self, argv: list[str], **_: object) -> None:
        pass  # the sandbox's kubelet really runs it

    def deny_exec(self, pod: str) -> None:
        message = (
            f'pods "{pod}" is forbidden: User "system:serviceaccount:ci:runner" cannot create '
            f'resource "pods/exec" in API group "" in the namespace "{self.namespace}"'
        )
        self.sandbox.faults.reject_next("GET", "/exec", 403, message=message, reason="Forbidden")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        yield running


@pytest.fixture(scope="module")
def cluster(
    sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubernetesCluster]:
    home = tmp_path_factory.mktemp("home")
    adapter = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=home)
    yield adapter
    adapter.close()


@pytest.fixture(scope="module")
def shared_driver(sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> SandboxExecDriver:
    driver = SandboxExecDriver(sandbox, cluster)
    pod = driver.running_pod()
    try:
        cluster.exec(pod, ["true"], namespace=driver.namespace, timeout=20)
    except NotFound:  # the pod is there: it is the exec subresource that is not served
        pytest.skip("sandbox has no exec yet")
    return driver


class TestKubernetesClusterExecContract(ClusterExecContract):
    @pytest.fixture
    def exec_driver(
        self, shared_driver: SandboxExecDriver, sandbox: KubernetesSandbox
    ) -> Iterator[SandboxExecDriver]:
        sandbox.faults.reset()
        yield shared_driver
        sandbox.faults.reset()


def test_importing_the_adapter_does_not_import_the_websocket_layer() -> None:
    code = (
        "import sys; import pegboard.adapters.kubernetes_cluster; "
        "print(sorted(m for m in sys.modules if m.startswith(('kubernetes.stream', 'websocket'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
