"""A running pod on the Kubernetes API sandbox that ExecShell and TarFileSync tests exec into."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contract.cluster_contract import phase_is, wait_for
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes.sandbox import KubernetesSandbox
from pegboard.adapters.tar_file_sync import TarFileSync
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


def pull_and_push_a_relative_path_starting_with_a_dash(
    cluster: Any, pod: ExecPod, local: Path
) -> None:
    """`-data` relative to the exec's working directory: find would read it as an expression
    (`find: unknown predicate`), so the listing names it `./-data`."""
    cwd = cluster.exec(pod.name, ["pwd"], namespace=pod.namespace, timeout=20)
    workdir = Path(cwd.stdout.decode().strip())
    remote = workdir / "-data"
    (remote / "sub").mkdir(parents=True)
    (remote / "sub" / "a.txt").write_bytes(b"pulled\n")
    try:
        sync = TarFileSync(cluster, namespace=pod.namespace, pod=pod.name)
        pulled = sync.pull("-data/", str(local / "back"))
        assert pulled.files == 1
        assert (local / "back" / "sub" / "a.txt").read_bytes() == b"pulled\n"
        (local / "up").mkdir()
        (local / "up" / "b.txt").write_bytes(b"pushed\n")
        pushed = sync.push(str(local / "up") + "/", "-data/up")
        assert pushed.files == 1
        assert (remote / "up" / "b.txt").read_bytes() == b"pushed\n"
        assert sync.pull("-data/up/b.txt", str(local / "b.txt")).files == 1
        assert (local / "b.txt").read_bytes() == b"pushed\n"
    finally:
        subprocess.run(["rm", "-rf", "--", str(remote)], check=True)
