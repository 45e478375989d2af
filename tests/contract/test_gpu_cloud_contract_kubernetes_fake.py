"""GpuCloud contract against KubernetesGpuCloud on FakeCluster (virtual time: the scheduler's
wait and the kubelet's steps move with the fake's clock)."""

from __future__ import annotations

from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from pegboard.adapters.fakes.cluster import FakeCluster, PodScript
from pegboard.adapters.providers.kubernetes.gpu_cloud import KubernetesGpuCloud
from pegboard.adapters.providers.kubernetes.pod_objects import GpuPodSettings
from pegboard.domain.ports.gpu_cloud import PodRequest


class _ClusterTime:
    """The fake cluster's clock, where sleeping lets the fake kubelet's steps happen."""

    def __init__(self, cluster: FakeCluster) -> None:
        self._cluster = cluster

    def now(self) -> float:
        return self._cluster.clock.now()

    def monotonic(self) -> float:
        return self._cluster.clock.now()

    def sleep(self, seconds: float) -> None:
        self._cluster.advance(seconds)


class _Driver:
    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.cluster.default_script = PodScript().running(at=2)
        self.cloud = KubernetesGpuCloud(
            self.cluster,
            namespace="default",
            clock=_ClusterTime(self.cluster),
            settings=GpuPodSettings(created_by="contract"),
            prices={"A100": 1.25},
        )
        self.volume_name = "models"
        self.unknown_volume_name = "no-such-volume"
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "models"},
                "spec": {"resources": {"requests": {"storage": "100Gi"}}},
            },
            namespace="default",
        )

    def request(self, name: str) -> PodRequest:
        return PodRequest(
            name=name, image="img:1", gpu_id="A100", datacenter_id="cluster", volume_gb=10
        )

    def settle(self) -> None:
        self.cluster.advance(1.0)


class TestKubernetesGpuCloudOnFakeContract(GpuCloudContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _Driver()
