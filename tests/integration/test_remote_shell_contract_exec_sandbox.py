"""RemoteShell contract against ExecShell over KubernetesCluster's websocket exec into a pod of
the Kubernetes API sandbox (real bash, coreutils and `timeout` behind the exec)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.cluster_contract import phase_is, wait_for
from contract.remote_shell_contract import RemoteShellContract
from contract.test_remote_shell_contract_ssh import _SshDriver
from pegboard.adapters.exec_shell import ExecShell
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.domain.ports.cluster import ResourceKind


class _Pod:
    """One running pod the shells exec into (module-wide: a pod per test is not needed)."""

    def __init__(self, sandbox: KubernetesSandbox, cluster: KubernetesCluster) -> None:
        self.cluster = cluster
        self.namespace = sandbox.namespace
        self.timeout = 20.0
        self.name = f"shell-{uuid.uuid4().hex[:8]}"
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "main", "image": "ubuntu:24.04", "command": ["sleep", "3600"]}
                ],
            },
        }
        cluster.create(manifest, namespace=self.namespace)
        wait_for(self, ResourceKind.POD, self.name, phase_is("Running"))  # type: ignore[arg-type]


class _SandboxDriver(_SshDriver):
    """The real-shell driver (files on this machine, jobs killed by their pid files)."""

    def __init__(self, pod: _Pod, root: Path) -> None:
        root.mkdir(parents=True)
        self.shell = ExecShell(pod.cluster, namespace=pod.namespace, pod=pod.name, container="main")
        self.root = str(root)  # the sandbox's containers see this machine's filesystem


@pytest.fixture(scope="module")
def pod() -> Iterator[_Pod]:
    with KubernetesSandbox() as sandbox:
        home = Path(sandbox.kubeconfig_path).parent
        cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=home)
        yield _Pod(sandbox, cluster)
        cluster.close()


class TestExecShellOnSandboxContract(RemoteShellContract):
    @pytest.fixture
    def driver(self, pod: _Pod, tmp_path: Path) -> Iterator[Any]:
        driver = _SandboxDriver(pod, tmp_path / "pod")
        yield driver
        driver.stop_jobs()
