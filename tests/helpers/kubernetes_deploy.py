"""The installed `runpod-deploy` with `pod.provider: kubernetes` against the Kubernetes API
sandbox, as a subprocess: the official client over HTTP, every phase over websocket exec.

`KubeDeploy` is one scratch user: HOME, KUBECONFIG pointing at a sandbox of the test's own (so
the credentials are the sandbox's token, resolved as squarepeg resolves them), a project
directory, configs written from examples/kubernetes/hello.yaml with sections replaced. Commands
and kill points are helpers.deploy_cli.DeployCli's; `pods()` and `claims()` look at what the
sandbox holds through the real adapter.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from helpers.deploy_cli import DeployCli
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.providers.kubernetes.pod_objects import TOOL_LABEL, TOOL_VALUE
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.ports.cluster import JsonObject, ResourceKind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OURS = f"{TOOL_LABEL}={TOOL_VALUE}"


class KubeDeploy(DeployCli):
    """One scratch user against one Kubernetes API sandbox (the caller starts and stops it)."""

    provider = "kubernetes"

    def __init__(self, tmp_path: Path, sandbox: KubernetesSandbox) -> None:
        self.sandbox = sandbox
        self.home = tmp_path / "home"
        self.marks = tmp_path / "marks"
        self.project = tmp_path / "project"
        self.marks.mkdir(parents=True)
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copytree(EXAMPLES / "local", self.project / "local")
        shutil.copytree(EXAMPLES / "kubernetes", self.project / "kubernetes")
        self.env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "KUBECONFIG": str(sandbox.kubeconfig_path),
            "USER": "jane",
            "LOGNAME": "jane",
        }
        self.cluster = KubernetesCluster(
            env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=self.home
        )

    def close(self) -> None:
        self.cluster.close()

    def config(self, **changes: Any) -> Path:
        """examples/kubernetes/hello.yaml with top-level keys replaced (None removes one), and
        `pod.<key>`/`kubernetes.<key>` merged from `pod=`/`kubernetes=` dicts."""
        data = yaml.safe_load((self.project / "kubernetes" / "hello.yaml").read_text())
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            elif key in ("pod", "kubernetes") and isinstance(value, dict):
                data[key] = {**data.get(key, {}), **value}
            else:
                data[key] = value
        count = len(list((self.project / "kubernetes").glob("*.yaml")))
        path = self.project / "kubernetes" / f"job-{count}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    # --- what the sandbox holds -----------------------------------------------------------
    def pods(self) -> list[JsonObject]:
        """runpod-deploy's pods in the namespace (not those being deleted)."""
        found = self.cluster.list(ResourceKind.POD, namespace="default", label_selector=OURS)
        return [p for p in found if not p["metadata"].get("deletionTimestamp")]

    def claims(self) -> list[JsonObject]:
        return self.cluster.list(
            ResourceKind.PERSISTENT_VOLUME_CLAIM, namespace="default", label_selector=OURS
        )

    def live(self) -> set[str]:
        """Names of runpod-deploy's pods and claims still there (a stopped pod is its claim)."""
        return {p["metadata"]["name"] for p in [*self.pods(), *self.claims()]}
