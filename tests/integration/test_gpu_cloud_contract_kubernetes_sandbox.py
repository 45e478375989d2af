"""GpuCloud contract against KubernetesGpuCloud over real HTTP to the Kubernetes API sandbox (the
official client; pods run as processes in the sandbox's kubelet, claims are the sandbox's)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.providers.kubernetes.gpu_cloud import KubernetesGpuCloud
from pegboard.adapters.providers.kubernetes.pod_objects import GpuPodSettings
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.system_clock import SystemClock
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.ports.gpu_cloud import PodRequest

GPU = "NVIDIA A100-SXM4-80GB"

TAINT = "nvidia.com/gpu=present:NoSchedule"  # as the GPU operator taints GPU nodes


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    node = {
        "name": "gpu-1",
        "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
        "capacity": {"nvidia.com/gpu": 8},
        "taints": [TAINT],
    }
    with KubernetesSandbox(nodes=[node]) as running:
        yield running


class _Driver:
    def __init__(self, sandbox: KubernetesSandbox, home: Path) -> None:
        self.cluster = KubernetesCluster(
            env={"KUBECONFIG": str(sandbox.kubeconfig_path)}, home=home
        )
        self.cloud = KubernetesGpuCloud(
            self.cluster,
            namespace="default",
            clock=SystemClock(),
            settings=GpuPodSettings(created_by="contract"),
            schedule_timeout_sec=10,
        )
        self.volume_name = "models"
        self.unknown_volume_name = "no-such-volume"
        if (
            self.cluster.read(ResourceKind.PERSISTENT_VOLUME_CLAIM, "models", namespace="default")
            is None
        ):
            self.cluster.create(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": "models"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "100Gi"}},
                    },
                },
                namespace="default",
            )

    def request(self, name: str) -> PodRequest:
        return PodRequest(
            name=name, image="busybox", gpu_id=GPU, datacenter_id="cluster", volume_gb=1
        )

    def settle(self) -> None:
        time.sleep(0.05)


class TestKubernetesGpuCloudOnSandboxContract(GpuCloudContract):
    @pytest.fixture
    def driver(self, sandbox: KubernetesSandbox, tmp_path: Path) -> Iterator[Any]:
        made = _Driver(sandbox, tmp_path)
        yield made
        made.cluster.close()
