"""GpuCloud contract against FakeGpuCloud."""

from __future__ import annotations

from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from pegboard.adapters.fakes import FakeClock, FakeGpuCloud
from pegboard.domain.ports.gpu_cloud import PodRequest


class _Driver:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.cloud = FakeGpuCloud(
            self.clock,
            ready_after=30.0,
            prices={"A4000": 0.25},
            stock={("A4000", "EU-RO-1"): "high"},
        )
        self.volume_name = "models"
        self.unknown_volume_name = "no-such-volume"
        self.cloud.add_volume(self.volume_name, "EU-RO-1")

    def request(self, name: str) -> PodRequest:
        return PodRequest(name=name, image="img:1", gpu_id="A4000", datacenter_id="EU-RO-1")

    def settle(self) -> None:
        self.clock.advance(5.0)


class TestFakeGpuCloudContract(GpuCloudContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _Driver()


def test_fake_network_volume_shared_name_is_ambiguous_and_id_wins() -> None:
    from pegboard.domain.ports.gpu_cloud import AmbiguousVolume

    cloud = FakeGpuCloud()
    first = cloud.add_volume("models", "EU-RO-1")
    cloud.add_volume("models", "US-CA-2")
    cloud.add_volume(first.volume_id, "CA-MTL-1")  # a name that is another volume's id
    with pytest.raises(AmbiguousVolume, match="2 network volumes are named 'models'"):
        cloud.network_volume("models")
    assert cloud.network_volume(first.volume_id) == first
