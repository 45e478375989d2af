"""Cluster.exec's contract against KubernetesCluster over the websocket exec of the Kubernetes
API sandbox (the official client's WSClient), plus what only the real adapter has."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.cluster_contract import phase_is, unique, wait_for
from contract.cluster_exec_contract import ClusterExecContract
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.domain.ports.cluster import ExecTimedOut, JsonObject, ResourceKind

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


# v5 (what the client prefers: stdin can be closed) and v4 alone (apiservers before 1.30).
@pytest.fixture(scope="module", params=[None, ("v4.channel.k8s.io",)], ids=["v5", "v4"])
def cluster(
    request: pytest.FixtureRequest,
    sandbox: KubernetesSandbox,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KubernetesCluster]:
    home = tmp_path_factory.mktemp("home")
    adapter = KubernetesCluster(
        env={"KUBECONFIG": str(sandbox.kubeconfig_path)},
        home=home,
        exec_subprotocols=request.param,
    )
    yield adapter
    adapter.close()


@pytest.fixture(scope="module")
def shared_driver(sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> SandboxExecDriver:
    return SandboxExecDriver(sandbox, cluster)


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


def test_stdin_ends_over_v5_and_cannot_over_v4(sandbox: KubernetesSandbox, tmp_path: Path) -> None:
    """v5.channel.k8s.io closes stdin after its last chunk, so `cat` ends; v4 has no way to
    say so, so `cat` waits (which is why ExecShell and TarFileSync delimit what they send)."""

    def adapter(protocols: tuple[str, ...]) -> KubernetesCluster:
        env = {"KUBECONFIG": str(sandbox.kubeconfig_path)}
        return KubernetesCluster(env=env, home=tmp_path, exec_subprotocols=protocols)

    v5, v4 = adapter(("v5.channel.k8s.io",)), adapter(("v4.channel.k8s.io",))
    driver = SandboxExecDriver(sandbox, v5)
    pod = driver.running_pod()
    result = v5.exec(pod, ["cat"], namespace=driver.namespace, stdin=b"abc", timeout=20)
    assert (result.exit_code, result.stdout) == (0, b"abc")
    with pytest.raises(ExecTimedOut):
        v4.exec(pod, ["cat"], namespace=driver.namespace, stdin=b"abc", timeout=1)
    v5.close()
    v4.close()
