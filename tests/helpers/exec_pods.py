"""A running pod on the Kubernetes API sandbox that ExecShell and TarFileSync tests exec into."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contract.cluster_contract import phase_is, wait_for
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.domain.ports.cluster import ResourceKind


class ExecPod:
    """One pod whose container `main` sleeps; its exec'd commands see this machine's files
    (the sandbox runs containers as local processes), so pod paths are local paths."""

    def __init__(
        self,
        sandbox: KubernetesSandbox,
        cluster: KubernetesCluster,
        env: dict[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.kubeconfig = Path(sandbox.kubeconfig_path)
        self.namespace = sandbox.namespace
        self.timeout = 20.0
        self.name = f"exec-{uuid.uuid4().hex[:8]}"
        container: dict[str, object] = {
            "name": "main",
            "image": "ubuntu:24.04",
            "command": ["sleep", "3600"],
        }
        if env:
            container["env"] = [{"name": key, "value": value} for key, value in env.items()]
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [container],
            },
        }
        cluster.create(manifest, namespace=self.namespace)
        wait_for(self, ResourceKind.POD, self.name, phase_is("Running"))  # type: ignore[arg-type]


@contextmanager
def exec_pod(env: dict[str, str] | None = None) -> Iterator[ExecPod]:
    """A fresh sandbox, a KubernetesCluster on it over HTTP, and one running pod (with `env`
    in its container's environment: a PATH there is what its exec'd commands find)."""
    with KubernetesSandbox() as sandbox:
        home = Path(sandbox.kubeconfig_path).parent
        cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=home)
        try:
            yield ExecPod(sandbox, cluster, env)
        finally:
            cluster.close()


V4_ONLY = ("v4.channel.k8s.io",)  # what an apiserver before 1.30 speaks: stdin never closes


@contextmanager
def v4_cluster(pod: ExecPod, home: Path) -> Iterator[KubernetesCluster]:
    """A second KubernetesCluster on the pod's sandbox, whose exec offers v4 only."""
    adapter = KubernetesCluster(
        env={"KUBECONFIG": str(pod.kubeconfig)}, home=home, exec_subprotocols=V4_ONLY
    )
    try:
        yield adapter
    finally:
        adapter.close()
