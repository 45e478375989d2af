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

    def request(self, name: str) -> PodRequest:
        return PodRequest(name=name, image="img:1", gpu_id="A4000", datacenter_id="EU-RO-1")

    def settle(self) -> None:
        self.clock.advance(5.0)


class TestFakeGpuCloudContract(GpuCloudContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _Driver()
